"""A small CDP client: one browser-level WebSocket to the slot's Chromium, sessions attached with ``flatten``.

Connected on first use (a script that never touches ``browser`` never pays for it); the endpoint is read from
``/json/version`` on the slot's own CDP port, which inside the sandbox is its own network namespace's loopback.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
from typing import Any

CONNECT_TIMEOUT = 10.0
CALL_TIMEOUT = 60.0
MAX_MESSAGE = 256 * 1024 * 1024


class CdpError(RuntimeError):
    """Chromium answered a command with an error (a closed target, a destroyed context, a bad parameter)."""


async def browser_ws_url(port: int) -> str:
    reader, writer = await asyncio.wait_for(asyncio.open_connection("127.0.0.1", port), CONNECT_TIMEOUT)
    try:
        writer.write(f"GET /json/version HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n".encode())
        await writer.drain()
        head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), CONNECT_TIMEOUT)
        length = next(
            (
                int(line.split(b":", 1)[1])
                for line in head.split(b"\r\n")
                if line.lower().startswith(b"content-length:")
            ),
            None,
        )
        # Chromium keeps the connection open despite "Connection: close": read exactly the body it announced
        read = reader.readexactly(length) if length is not None else reader.read(64 * 1024)
        body = await asyncio.wait_for(read, CONNECT_TIMEOUT)
    except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError) as exc:
        raise ConnectionError(f"the browser's DevTools endpoint on port {port} did not answer") from exc
    finally:
        writer.close()
    try:
        url = json.loads(body)["webSocketDebuggerUrl"]
    except (ValueError, KeyError, TypeError) as exc:
        raise ConnectionError(f"the browser's DevTools endpoint on port {port} gave no WebSocket URL") from exc
    return str(url)


class Cdp:
    def __init__(self, port: int) -> None:
        self._port = port
        self._ws: Any = None
        self._connecting: asyncio.Lock | None = None
        self._ids = itertools.count(1)
        self._waiting: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self._reader: asyncio.Task[None] | None = None
        self.detached: set[str] = set()
        """Sessions Chromium reported detached (their target closed or navigated to another process)."""

    async def _connection(self) -> Any:
        if self._ws is not None:
            return self._ws
        if self._connecting is None:
            self._connecting = asyncio.Lock()
        async with self._connecting:
            if self._ws is None:
                from websockets.asyncio.client import connect  # imported on first use: start-up stays fast

                url = await browser_ws_url(self._port)
                self._ws = await asyncio.wait_for(
                    connect(url, max_size=MAX_MESSAGE, ping_interval=None, open_timeout=CONNECT_TIMEOUT),
                    CONNECT_TIMEOUT,
                )
                self._reader = asyncio.ensure_future(self._read(self._ws))
        return self._ws

    async def send(self, method: str, params: dict[str, Any] | None = None, session_id: str | None = None) -> Any:
        ws = await self._connection()
        call_id = next(self._ids)
        message: dict[str, Any] = {"id": call_id, "method": method, "params": params or {}}
        if session_id is not None:
            message["sessionId"] = session_id
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._waiting[call_id] = future
        try:
            await ws.send(json.dumps(message))
            reply = await asyncio.wait_for(future, CALL_TIMEOUT)
        finally:
            self._waiting.pop(call_id, None)
        if "error" in reply:
            error = reply["error"]
            raise CdpError(str(error.get("message", error) if isinstance(error, dict) else error)[:300])
        return reply.get("result", {})

    async def _read(self, ws: Any) -> None:
        try:
            async for raw in ws:
                message = json.loads(raw)
                call_id = message.get("id")
                if call_id is not None:
                    future = self._waiting.get(call_id)
                    if future is not None and not future.done():
                        future.set_result(message)
                elif message.get("method") == "Target.detachedFromTarget":
                    session = message.get("params", {}).get("sessionId")
                    if session:
                        self.detached.add(session)
        except Exception:  # the connection dropped: every waiting call fails, the next one reconnects
            pass
        finally:
            if self._ws is ws:
                self._ws = None
            for future in self._waiting.values():
                if not future.done():
                    future.set_exception(ConnectionError("the connection to the browser was lost"))

    async def aclose(self) -> None:
        ws, self._ws = self._ws, None
        if ws is not None:
            with contextlib.suppress(Exception):
                await ws.close()
