"""Readiness probes for slot children, and the tiny loopback HTTP client they share.

A probe is an async callable returning True once the thing it watches is ready; it may raise ``OSError`` or
``ValueError`` for "not yet" as well. :meth:`ManagedProcess.wait_ready` polls it with backoff.

The DevTools HTTP endpoint is queried with a minimal HTTP/1.1 client over ``asyncio`` streams rather than
``httpx``: building an ``httpx.AsyncClient`` costs 40-180 ms (SSL context, certificates), which is a
sizeable share of a 0.3 s slot start, and the endpoint only ever serves small JSON documents on 127.0.0.1.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
from typing import TYPE_CHECKING, Any, Protocol

from websockets.asyncio.client import connect as websocket_connect
from websockets.exceptions import ConnectionClosed, InvalidHandshake, InvalidURI
from websockets.typing import Subprotocol

from openbrowse.slots.netns import SlotUnreachable

if TYPE_CHECKING:
    from pathlib import Path

    from openbrowse.slots.netns import SlotNetwork

__all__ = [
    "CdpVersionProbe",
    "DisplayFdProbe",
    "LiveViewProbe",
    "Probe",
    "TcpPortProbe",
    "UnixSocketProbe",
    "XSocketProbe",
    "loopback_http_json",
]

_MAX_BODY = 1024 * 1024


class Probe(Protocol):
    """Something :meth:`ManagedProcess.wait_ready` can poll."""

    @property
    def description(self) -> str:
        """What is being waited for, for error messages."""
        ...

    async def __call__(self) -> bool: ...


async def _close_writer(writer: asyncio.StreamWriter) -> None:
    writer.close()
    with contextlib.suppress(OSError):
        await writer.wait_closed()


class TcpPortProbe:
    """Ready when a TCP connection to ``host:port`` is accepted."""

    def __init__(self, port: int, host: str = "127.0.0.1") -> None:
        self.host = host
        self.port = port

    @property
    def description(self) -> str:
        return f"TCP {self.host}:{self.port} to accept connections"

    async def __call__(self) -> bool:
        try:
            _, writer = await asyncio.open_connection(self.host, self.port)
        except OSError:
            return False
        await _close_writer(writer)
        return True


class XSocketProbe:
    """Ready when the X server's Unix socket ``/tmp/.X11-unix/X<n>`` accepts a connection."""

    def __init__(self, socket_path: Path) -> None:
        self.socket_path = socket_path

    @property
    def description(self) -> str:
        return f"X socket {self.socket_path}"

    async def __call__(self) -> bool:
        try:
            _, writer = await asyncio.open_unix_connection(str(self.socket_path))
        except OSError:
            return False
        await _close_writer(writer)
        return True


class DisplayFdProbe:
    """Ready when Xvfb has written its display number to the ``-displayfd`` pipe (exact, no polling of sockets).

    The probe owns the pipe's read end; call :meth:`close` when done with it.
    """

    def __init__(self, read_fd: int) -> None:
        self._fd: int | None = read_fd
        os.set_blocking(read_fd, False)
        self._buffer = b""
        self.display_number: int | None = None

    @property
    def description(self) -> str:
        return "Xvfb to report its display on -displayfd"

    async def __call__(self) -> bool:
        if self.display_number is not None:
            return True
        if self._fd is None:
            raise ValueError("the -displayfd pipe is closed")
        try:
            chunk = os.read(self._fd, 64)
        except BlockingIOError:
            return False
        if not chunk:
            self.close()
            raise ValueError("Xvfb closed -displayfd without reporting a display")
        self._buffer += chunk
        if b"\n" not in self._buffer:
            return False
        self.display_number = int(self._buffer.split(b"\n", 1)[0].strip())
        self.close()
        return True

    def close(self) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)


async def loopback_http_json(
    port: int, path: str, *, method: str = "GET", within: float = 2.0, network: SlotNetwork | None = None
) -> tuple[int, Any]:
    """``method path`` on ``127.0.0.1:port`` (of a slot's own ``network`` namespace when given, else the host's);
    returns ``(status, parsed JSON body or text)``.

    Raises ``OSError``/``ValueError``/``TimeoutError`` on connection or protocol problems (``SlotUnreachable``,
    an ``OSError`` too for callers, is translated).
    """
    async with asyncio.timeout(within):
        if network is None:
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
        else:
            try:
                reader, writer = await network.open_connection(port)
            except SlotUnreachable as exc:
                raise ConnectionRefusedError(str(exc)) from exc
        try:
            request = (
                f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\nContent-Length: 0\r\n\r\n"
            )
            writer.write(request.encode("ascii"))
            await writer.drain()
            head = await reader.readuntil(b"\r\n\r\n")
            lines = head.decode("latin-1").split("\r\n")
            status = int(lines[0].split(" ", 2)[1])
            headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:] if line)}
            if "content-length" in headers:
                length = int(headers["content-length"])
                if length > _MAX_BODY:
                    raise ValueError(f"response body too large ({length} bytes)")
                body = await reader.readexactly(length)
            else:
                body = await reader.read(_MAX_BODY)
        except asyncio.IncompleteReadError as exc:
            raise ValueError(f"truncated HTTP response from 127.0.0.1:{port}{path}") from exc
        finally:
            await _close_writer(writer)
    text = body.decode("utf-8", errors="replace")
    try:
        return status, json.loads(text)
    except json.JSONDecodeError:
        return status, text


class CdpVersionProbe:
    """Ready when ``GET http://127.0.0.1:<port>/json/version`` answers 200 with a browser WebSocket URL."""

    def __init__(self, port: int, network: SlotNetwork | None = None) -> None:
        self.port = port
        self.network = network
        self.version: dict[str, Any] | None = None

    @property
    def description(self) -> str:
        return f"GET http://127.0.0.1:{self.port}/json/version to answer 200"

    async def __call__(self) -> bool:
        try:
            status, body = await loopback_http_json(self.port, "/json/version", within=2.0, network=self.network)
        except (OSError, ValueError):
            return False
        if status != 200 or not isinstance(body, dict) or "webSocketDebuggerUrl" not in body:
            return False
        self.version = body
        return True


class UnixSocketProbe:
    """Ready when the Unix socket at ``path`` accepts a connection (x11vnc's ``-unixsock``)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    @property
    def description(self) -> str:
        return f"Unix socket {self.path} to accept connections"

    async def __call__(self) -> bool:
        try:
            _, writer = await asyncio.open_unix_connection(str(self.path))
        except OSError:
            return False
        await _close_writer(writer)
        return True


class LiveViewProbe:
    """Ready when websockify, given the slot's secret, relays x11vnc's greeting (``RFB 003.008``): the whole live
    view, proven end to end with one connection. Inside a sandbox the socket is made in the slot's namespace."""

    def __init__(self, port: int, token: str, network: SlotNetwork | None = None, within: float = 2.0) -> None:
        self.port = port
        self.url = f"ws://127.0.0.1:{port}/websockify?token={token}"
        self.network = network
        self.within = within

    @property
    def description(self) -> str:
        return f"websockify on port {self.port} to relay x11vnc's greeting"

    async def __call__(self) -> bool:
        try:
            async with asyncio.timeout(self.within):
                sock = None if self.network is None else await self.network.connect(self.port)
                async with websocket_connect(
                    self.url, sock=sock, subprotocols=[Subprotocol("binary")], proxy=None, compression=None
                ) as ws:
                    first = await ws.recv()
        except (OSError, TimeoutError, SlotUnreachable, InvalidHandshake, InvalidURI, ConnectionClosed):
            return False
        return isinstance(first, bytes) and first.startswith(b"RFB ")
