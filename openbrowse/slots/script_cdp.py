"""The script host's CDP, server side: frames from the host's socket, checked by :class:`PageScope`, to Chromium.

The host holds one end of a ``socketpair``; this object holds the other and, on the first command, connects to
the slot's Chromium itself, as the server's other CDP clients do (the slot's pinned WebSocket URL, given as a
callable), never through anything the slot could name. Every command is parsed and rebuilt by the scope (refusals
are answered here); every message from Chromium is parsed so the scope can tell whose it is, and passed on as
Chromium sent it. Parsing and encoding a message over :data:`INLINE_LIMIT` (a screenshot, a big DOM) runs on a
worker thread, so the event loop never holds one for long. Measured on this machine under load: 64 KiB parsed and
encoded in 0.1 ms, 256 KiB in 2 ms, a 4 MiB screenshot reply in 20 ms, 20 MiB in 120 ms.

Why a second socket rather than frames on the channel: CDP messages are far larger than helper calls (64 MiB
against the channel's lines) and come unasked (events); on their own stream a screenshot never delays a helper
reply, and the channel's validation stays about the channel's small typed messages.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import logging
import socket
from collections.abc import Callable
from typing import Any

from openbrowse.scripthost.wire import CDP_COMMAND_LIMIT, CDP_HEADER, CDP_MESSAGE_LIMIT
from openbrowse.slots.page_scope import Forward, PageScope, Refuse

logger = logging.getLogger(__name__)

__all__ = ["INLINE_LIMIT", "ScriptCdp"]

INLINE_LIMIT = 64 * 1024
CONNECT_TIMEOUT = 10.0
CHROMIUM_QUEUE = 1
"""Messages websockets holds from Chromium while the script does not read: a script that asks for screenshots and
never reads them makes the server hold at most this one, the one being passed on, and the socket buffers."""


def _frame(message: dict[str, Any]) -> bytes:
    data = json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode()
    return len(data).to_bytes(CDP_HEADER, "big") + data


async def _off_loop(size: int, work: Callable[[], Any]) -> Any:
    return work() if size <= INLINE_LIMIT else await asyncio.to_thread(work)


class ScriptCdp:
    """One script host's CDP stream; :meth:`start` serves it until either side hangs up or :meth:`abort`."""

    def __init__(self, name: str, sock: socket.socket, ws_url: Callable[[], str]) -> None:
        self.name = name
        self._sock = sock
        self._ws_url = ws_url
        self.scope = PageScope()
        self._ws: Any = None
        self._writer: asyncio.StreamWriter | None = None
        self._task: asyncio.Task[None] | None = None

    def focus(self, target_id: str | None) -> None:
        """The page the script works on from now (the agent's focused tab of the run)."""
        self.scope.focus(target_id)

    def start(self) -> None:
        self._task = asyncio.ensure_future(self._serve())

    def abort(self) -> asyncio.Task[None] | None:
        """Stop serving now; the returned task ends once the Chromium connection is closed."""
        task = self._task
        if task is not None:
            task.cancel()
        return task

    async def _serve(self) -> None:
        pump: asyncio.Task[None] | None = None
        try:
            reader, self._writer = await asyncio.open_connection(sock=self._sock, limit=CDP_HEADER + CDP_COMMAND_LIMIT)
            while (data := await self._read_command(reader)) is not None:
                command = await _off_loop(len(data), functools.partial(_loads, data))
                decision = self.scope.check(command)
                if isinstance(decision, Refuse):
                    await self._to_script(_frame(decision.reply(command if isinstance(command, dict) else {})))
                    continue
                if self._ws is None:
                    if not await self._connect(decision):
                        continue
                    pump = asyncio.ensure_future(self._from_chromium(self._ws))
                await self._to_chromium(decision)
        except (OSError, ConnectionError, asyncio.IncompleteReadError):
            pass
        except Exception as exc:  # websockets' ConnectionClosed: the browser went away under a command
            logger.debug("%s: the script's CDP stream ended: %s", self.name, exc)
        finally:
            if pump is not None:
                pump.cancel()
            ws, self._ws = self._ws, None
            if ws is not None:
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(ws.close(), 2.0)
            if self._writer is not None:
                self._writer.close()
            self._sock.close()

    async def _read_command(self, reader: asyncio.StreamReader) -> bytes | None:
        try:
            size = int.from_bytes(await reader.readexactly(CDP_HEADER), "big")
        except asyncio.IncompleteReadError:
            return None
        if size > CDP_COMMAND_LIMIT:
            return None  # the host broke the framing: nothing more from it can be trusted
        return await reader.readexactly(size)

    async def _connect(self, first: Forward) -> bool:
        from websockets.asyncio.client import connect

        try:
            self._ws = await asyncio.wait_for(
                connect(
                    self._ws_url(),
                    max_size=CDP_MESSAGE_LIMIT,
                    max_queue=CHROMIUM_QUEUE,
                    ping_interval=None,
                    open_timeout=CONNECT_TIMEOUT,
                ),
                CONNECT_TIMEOUT,
            )
        except (OSError, TimeoutError, RuntimeError, ValueError) as exc:
            logger.warning("%s: the script's CDP could not reach the browser: %s", self.name, exc)
            reply = Refuse("the browser is not reachable").reply(first.command)
            await self._to_script(_frame(reply))
            return False
        return True

    async def _to_chromium(self, decision: Forward) -> None:
        text = json.dumps(decision.command, ensure_ascii=False, separators=(",", ":"))
        await self._ws.send(text)

    async def _to_script(self, frame: bytes) -> None:
        writer = self._writer
        if writer is None:
            return
        writer.write(frame)
        await writer.drain()

    async def _from_chromium(self, ws: Any) -> None:
        try:
            async for raw in ws:
                size = len(raw)
                message, frame = await _off_loop(size, functools.partial(_parse_and_frame, raw))
                if isinstance(message, dict) and self.scope.passes(message):
                    await self._to_script(frame)
        except (OSError, ConnectionError):
            pass
        except Exception as exc:  # the browser closed the connection (or went away): the script's calls fail
            logger.debug("%s: the script's CDP connection ended: %s", self.name, exc)
        finally:
            if self._writer is not None:
                self._writer.close()  # the host sees the stream end and fails what it waits for


def _loads(data: bytes) -> object:
    try:
        return json.loads(data)
    except ValueError:
        return None


def _parse_and_frame(raw: str | bytes) -> tuple[object, bytes]:
    data = raw.encode() if isinstance(raw, str) else raw
    try:
        message = json.loads(data)
    except ValueError:
        message = None
    return message, len(data).to_bytes(CDP_HEADER, "big") + data
