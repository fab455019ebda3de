"""The host's end of the channel: one inherited socket (a ``socketpair`` end the server made), read by a thread.

The thread reads every line the server sends: a ``run`` goes to the event loop's queue, a ``reply`` wakes the
call waiting for it. A call is made either from async code (``await call(...)``: the loop keeps running) or from
the synchronous helpers scripts use without ``await`` (``save_json``, ``add_item``): those block the script, as a
local function would, until the reply is there. Writes from any thread share one lock. When the server closes
the channel the host exits at once, whatever the script is doing.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import os
import socket
import threading
from typing import Any

from openbrowse.scripthost.wire import MAX_LINE

CALL_WAIT = 900.0
"""A synchronous call waits at most this long (the server answers or kills the host long before)."""


class ChannelError(RuntimeError):
    """The server refused a call in a way no Python exception names."""


class StoreError(Exception):
    """The answer store refused a write; the message says what to do instead."""


_KINDS: dict[str, type[Exception]] = {
    "PermissionError": PermissionError,
    "FileNotFoundError": FileNotFoundError,
    "FileExistsError": FileExistsError,
    "IsADirectoryError": IsADirectoryError,
    "OSError": OSError,  # a full file area (the server refuses a write past the area's cap)
    "ConnectionError": ConnectionError,
    "TimeoutError": TimeoutError,
    "ValueError": ValueError,
    "TypeError": TypeError,
    "KeyError": KeyError,
    "LookupError": LookupError,
    "StoreError": StoreError,
}


def error_of(kind: str, message: str) -> Exception:
    return _KINDS.get(kind, ChannelError)(message)


class _Waiter:
    __slots__ = ("event", "future", "loop", "reply")

    def __init__(self, loop: asyncio.AbstractEventLoop | None = None) -> None:
        self.event = threading.Event()
        self.loop = loop
        self.future: asyncio.Future[dict[str, Any]] | None = loop.create_future() if loop is not None else None
        self.reply: dict[str, Any] | None = None


class Channel:
    def __init__(self, fd: int, token: str) -> None:
        self._sock = socket.socket(fileno=fd)
        self._reader = self._sock.makefile("rb")
        self._write_lock = threading.Lock()
        self._ids = itertools.count(1)
        self._waiting: dict[int, _Waiter] = {}
        self._waiting_lock = threading.Lock()
        self.runs: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self._loop = asyncio.get_running_loop()
        self.send({"type": "hello", "token": token})
        self._thread = threading.Thread(target=self._read, name="channel", daemon=True)
        self._thread.start()

    # -- sending -------------------------------------------------------------------------------------------
    def send(self, message: dict[str, Any]) -> None:
        line = json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "surrogatepass") + b"\n"
        if len(line) > MAX_LINE:
            raise ValueError(f"the message is too large for the channel ({len(line)} bytes; at most {MAX_LINE})")
        with self._write_lock:
            self._sock.sendall(line)

    def call_sync(self, method: str, args: dict[str, Any]) -> Any:
        if threading.current_thread() is self._thread:  # a file closed by the collector on this thread
            raise RuntimeError(f"{method} cannot be called from the channel's own thread")
        waiter = _Waiter()
        call_id = self._register(waiter)
        try:
            self.send({"type": "call", "id": call_id, "method": method, "args": args})
            if not waiter.event.wait(CALL_WAIT):
                raise TimeoutError(f"the server did not answer {method} within {CALL_WAIT:.0f} s")
        finally:
            self._forget(call_id)
        return _value(waiter.reply)

    async def call(self, method: str, args: dict[str, Any]) -> Any:
        waiter = _Waiter(asyncio.get_running_loop())
        call_id = self._register(waiter)
        try:
            self.send({"type": "call", "id": call_id, "method": method, "args": args})
            assert waiter.future is not None
            reply = await waiter.future
        finally:
            self._forget(call_id)
        return _value(reply)

    def _register(self, waiter: _Waiter) -> int:
        call_id = next(self._ids)
        with self._waiting_lock:
            self._waiting[call_id] = waiter
        return call_id

    def _forget(self, call_id: int) -> None:
        with self._waiting_lock:
            self._waiting.pop(call_id, None)

    # -- the reading thread --------------------------------------------------------------------------------
    def _read(self) -> None:
        try:
            while True:
                line = self._reader.readline(MAX_LINE + 1)
                if not line or not line.endswith(b"\n"):
                    break  # the server closed the channel (or broke the framing): nothing left to serve
                message = json.loads(line)
                if not isinstance(message, dict):
                    continue
                if message.get("type") == "run":
                    self._loop.call_soon_threadsafe(self.runs.put_nowait, message)
                elif message.get("type") == "reply":
                    self._settle(message)
        except (OSError, ValueError, RuntimeError):  # RuntimeError: the loop closed under the thread
            pass
        os._exit(0)

    def _settle(self, reply: dict[str, Any]) -> None:
        call_id = reply.get("id")
        with self._waiting_lock:
            waiter = self._waiting.get(call_id) if isinstance(call_id, int) else None
        if waiter is None:
            return  # the call gave up (its task was cancelled); the late reply has nobody to go to
        waiter.reply = reply
        if waiter.loop is not None and waiter.future is not None:
            future = waiter.future
            with contextlib.suppress(RuntimeError):
                waiter.loop.call_soon_threadsafe(_resolve, future, reply)
        waiter.event.set()


def _resolve(future: asyncio.Future[dict[str, Any]], reply: dict[str, Any]) -> None:
    if not future.done():
        future.set_result(reply)


def _value(reply: dict[str, Any] | None) -> Any:
    if reply is None:
        raise ChannelError("the server sent no reply")
    if reply.get("ok"):
        return reply.get("value")
    raise error_of(str(reply.get("kind") or ""), str(reply.get("error") or "the call failed"))
