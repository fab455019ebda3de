"""A small CDP client over the inherited CDP socket: the server's page filter is on the other end, not Chromium.

The filter lets a script reach the agent's focused page and that page's own frames, nothing of the browser: it
attaches to the focused target, auto-attaches the page's cross-origin frames (``Target.setAutoAttach``), and
refuses the rest with a CDP error. Frames are length-prefixed (``wire.CDP_HEADER``). The stream is opened on first
use, so a script that never touches ``browser`` never pays for it.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import socket
from typing import Any

from openbrowse.scripthost.wire import CDP_COMMAND_LIMIT, CDP_HEADER, CDP_MESSAGE_LIMIT

CALL_TIMEOUT = 60.0


class CdpError(RuntimeError):
    """Chromium (or the filter) answered a command with an error: a closed target, a bad parameter, a refusal."""


class Cdp:
    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._writer: asyncio.StreamWriter | None = None
        self._connecting: asyncio.Lock | None = None
        self._ids = itertools.count(1)
        self._waiting: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self._reader: asyncio.Task[None] | None = None
        self._lost = False
        self._tasks: set[asyncio.Task[Any]] = set()
        self.detached: set[str] = set()
        """Sessions Chromium reported detached (their target closed or navigated to another process)."""
        self.frames: dict[str, str] = {}
        """Auto-attached frame targets of the page (target id → session id), cross-origin iframes."""

    async def _connection(self) -> asyncio.StreamWriter:
        if self._writer is not None:
            return self._writer
        if self._connecting is None:
            self._connecting = asyncio.Lock()
        async with self._connecting:
            if self._lost:
                raise ConnectionError("the connection to the browser was lost (the browser went away)")
            if self._writer is None:
                sock = socket.socket(fileno=self._fd)
                reader, writer = await asyncio.open_connection(sock=sock, limit=CDP_HEADER + CDP_MESSAGE_LIMIT)
                self._writer = writer
                self._reader = asyncio.ensure_future(self._read(reader))
        return self._writer

    async def send(self, method: str, params: dict[str, Any] | None = None, session_id: str | None = None) -> Any:
        writer = await self._connection()
        call_id = next(self._ids)
        message: dict[str, Any] = {"id": call_id, "method": method, "params": params or {}}
        if session_id is not None:
            message["sessionId"] = session_id
        data = json.dumps(message, separators=(",", ":")).encode()
        if len(data) > CDP_COMMAND_LIMIT:
            raise ValueError(f"the {method} command is too large ({len(data)} bytes; at most {CDP_COMMAND_LIMIT})")
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._waiting[call_id] = future
        try:
            writer.write(len(data).to_bytes(CDP_HEADER, "big") + data)
            await writer.drain()
            reply = await asyncio.wait_for(future, CALL_TIMEOUT)
        finally:
            self._waiting.pop(call_id, None)
        if "error" in reply:
            error = reply["error"]
            raise CdpError(str(error.get("message", error) if isinstance(error, dict) else error)[:300])
        return reply.get("result", {})

    async def _read(self, reader: asyncio.StreamReader) -> None:
        try:
            while True:
                size = int.from_bytes(await reader.readexactly(CDP_HEADER), "big")
                message = json.loads(await reader.readexactly(size))
                call_id = message.get("id")
                if call_id is not None:
                    future = self._waiting.get(call_id)
                    if future is not None and not future.done():
                        future.set_result(message)
                else:
                    self._event(message)
        except Exception:  # the server closed the stream: every waiting call fails
            pass
        finally:
            self._writer, self._lost = None, True
            for future in self._waiting.values():
                if not future.done():
                    future.set_exception(ConnectionError("the connection to the browser was lost"))

    def _event(self, message: dict[str, Any]) -> None:
        params = message.get("params") or {}
        method = message.get("method")
        if method == "Target.detachedFromTarget":
            gone = params.get("sessionId")
            if isinstance(gone, str):
                self.detached.add(gone)
                for frame_target, attached in list(self.frames.items()):
                    if attached == gone:
                        del self.frames[frame_target]
        elif method == "Target.attachedToTarget":
            info = params.get("targetInfo") or {}
            child, target = params.get("sessionId"), info.get("targetId")
            if child and target and info.get("type") == "iframe":
                self.frames[str(target)] = str(child)
                self.detached.discard(str(child))
                task = asyncio.ensure_future(self.auto_attach(str(child)))  # its own cross-origin frames
                self._tasks.add(task)
                task.add_done_callback(self._tasks.discard)

    async def auto_attach(self, session_id: str) -> None:
        """Have Chromium attach the frames of ``session_id``'s target, now and as they come (flattened sessions)."""
        params = {"autoAttach": True, "waitForDebuggerOnStart": False, "flatten": True}
        with contextlib.suppress(CdpError, ConnectionError, TimeoutError):
            await self.send("Target.setAutoAttach", params, session_id)

    async def aclose(self) -> None:
        writer, self._writer = self._writer, None
        if writer is not None:
            writer.close()
