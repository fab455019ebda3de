"""The server's end of a connected script host's channel: the message pump, the run it serves, helper calls.

Every line the host sends is validated (``script_wire.py``). Output and the end of the current run are queued for
:class:`~openbrowse.slots.script_host.ScriptHost`; helper calls go to the run's handler, at most
:data:`MAX_CALLS` at once, and are answered in order of completion. A call that cannot be served is refused with
an error the script sees, never left unanswered.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

from openbrowse.domain.scripts import CallHandler, ScriptCallError
from openbrowse.scripthost.wire import MAX_LINE, OUTPUT_LIMIT
from openbrowse.slots.script_wire import ERROR_LIMIT, Call, Done, Output, Refused, encode, parse, read_line

logger = logging.getLogger(__name__)

__all__ = ["MAX_CALLS", "SETTLE_WAIT", "HostConnection", "RunOutput"]

MAX_CALLS = 32
SETTLE_WAIT = 2.0


class RunOutput:
    """A run's printed output: kept up to ``OUTPUT_LIMIT`` characters, all of it counted."""

    def __init__(self) -> None:
        self._parts: list[str] = []
        self.kept = 0
        self.received = 0

    def add(self, text: str) -> None:
        self.received += len(text)
        room = OUTPUT_LIMIT - self.kept
        if room > 0:
            self._parts.append(text[:room])
            self.kept += min(room, len(text))

    @property
    def text(self) -> str:
        return "".join(self._parts)


class HostConnection:
    """One connected host: the message pump, the run being served, and the helper calls in flight."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._reader = reader
        self._writer = writer
        self._write_lock = asyncio.Lock()
        self.messages: asyncio.Queue[Output | Done | None] = asyncio.Queue()
        self.run_id: int | None = None
        self.on_call: CallHandler | None = None
        self.calls: set[asyncio.Task[None]] = set()
        self.ended_by: str | None = None
        self._pump = asyncio.ensure_future(self._read())

    async def send(self, message: dict[str, Any]) -> None:
        async with self._write_lock:
            self._writer.write(encode(message))
            await self._writer.drain()

    def ended(self) -> None:
        self.messages.put_nowait(None)

    def abort(self, reason: str) -> None:
        if self.ended_by is None:
            self.ended_by = reason
        self._pump.cancel()
        for task in self.calls:
            task.cancel()
        self._writer.transport.abort()
        self.ended()

    async def settle_calls(self) -> None:
        """Cancel the calls a finished run left (an un-awaited ``fetch``) and wait briefly for them to end."""
        pending = set(self.calls)
        for task in pending:
            task.cancel()
        if pending:
            await asyncio.wait(pending, timeout=SETTLE_WAIT)

    async def _read(self) -> None:
        try:
            while True:
                line = await read_line(self._reader)
                if line is None:
                    break
                message = line if isinstance(line, Refused) else parse(line)
                if isinstance(message, Refused):
                    if message.call_id is not None:
                        await self._refuse(message.call_id, "ValueError", message.reason)
                    continue
                if isinstance(message, Call):
                    await self._dispatch(message)
                elif isinstance(message, Output | Done) and message.id == self.run_id:
                    self.messages.put_nowait(message)
        except (OSError, ConnectionError):
            pass
        finally:
            self.ended()

    async def _dispatch(self, call: Call) -> None:
        handler = self.on_call
        if handler is None:
            await self._refuse(call.id, "RuntimeError", "No script is running, so this call cannot be served.")
        elif len(self.calls) >= MAX_CALLS:
            await self._refuse(call.id, "RuntimeError", f"Too many helper calls at once (at most {MAX_CALLS}).")
        else:
            task = asyncio.ensure_future(self._serve(call, handler))
            self.calls.add(task)
            task.add_done_callback(self.calls.discard)

    async def _serve(self, call: Call, handler: CallHandler) -> None:
        try:
            value = await handler(call.method, call.args)
            line = encode({"type": "reply", "id": call.id, "ok": True, "value": value})
        except ScriptCallError as exc:
            await self._refuse(call.id, exc.kind, exc.message)
            return
        except (TypeError, ValueError):  # a value JSON cannot carry
            await self._refuse(call.id, "TypeError", f"{call.method} returned a value the channel cannot carry.")
            return
        except Exception:
            logger.exception("A script's %s call failed on the server", call.method)
            await self._refuse(call.id, "RuntimeError", f"The server could not complete {call.method}.")
            return
        if len(line) > MAX_LINE:
            await self._refuse(call.id, "ValueError", f"The reply to {call.method} is too large for the channel.")
            return
        async with self._write_lock:
            self._writer.write(line)
            await self._writer.drain()

    async def _refuse(self, call_id: int, kind: str, message: str) -> None:
        reply = {"type": "reply", "id": call_id, "ok": False, "error": message[:ERROR_LIMIT], "kind": kind}
        with contextlib.suppress(OSError, ConnectionError):
            await self.send(reply)
