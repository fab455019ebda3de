"""The way out through an upstream proxy (spec §28.1): the proxy's own address checked by the network policy, the
HTTP ``CONNECT`` or SOCKS5 handshake (credentials added here, on the server's side of the sandbox), the bytes that
went through it, and one report per failure streak.

A :class:`ProxyRoute` belongs to one owner (a session or a raw browser) and is shared by everything that leaves its
slot: the egress enforcer (page traffic, WebSocket, the script host's raw sockets) and the server-side fetches made
for it (``http_fetch``, the script helper's ``fetch()``). The destination handed to the proxy is always an address
the enforcer resolved and checked (pinned), never a name the proxy would resolve again.

The handshake speaks to a :class:`ByteStream`, so asyncio streams and httpcore's streams share one implementation.
A head is read one byte at a time: nothing of the tunnelled bytes is ever read ahead into a buffer of ours.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import ipaddress
import logging
import struct
from collections.abc import Callable
from typing import Protocol

from openbrowse.network.hosts import Endpoint, IPAddress
from openbrowse.network.policy import NetworkRules
from openbrowse.network.upstream import UpstreamProxy

__all__ = ["ByteStream", "ProxyFailed", "ProxyRoute", "StreamPair"]

logger = logging.getLogger(__name__)

HANDSHAKE_TIMEOUT = 20.0
MAX_PROXY_HEAD = 8 * 1024
_SOCKS_REPLIES = {
    1: "general failure",
    2: "connection not allowed by its rules",
    3: "network unreachable",
    4: "host unreachable",
    5: "connection refused by the destination",
    6: "TTL expired",
    7: "command not supported",
    8: "address type not supported",
}

FailureListener = Callable[[UpstreamProxy, str], None]


class ProxyFailed(Exception):
    """The upstream proxy could not be reached, refused, or failed the handshake. The message names the proxy by
    ``host:port`` only, and says the request was not sent directly."""

    def __init__(self, proxy: UpstreamProxy, reason: str) -> None:
        super().__init__(
            f"The upstream proxy {proxy.label} failed: {reason}; the request was not sent (never directly)."
        )
        self.proxy_label = proxy.label
        self.reason = reason


class ByteStream(Protocol):
    async def send(self, data: bytes) -> None: ...

    async def recv(self, max_bytes: int) -> bytes:
        """Up to ``max_bytes``; ``b""`` at the end of the stream."""
        ...


class StreamPair:
    """An asyncio reader/writer pair as a :class:`ByteStream`."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer

    async def send(self, data: bytes) -> None:
        self.writer.write(data)
        await self.writer.drain()

    async def recv(self, max_bytes: int) -> bytes:
        return await self.reader.read(max_bytes)


async def _exactly(stream: ByteStream, count: int) -> bytes:
    data = b""
    while len(data) < count:
        chunk = await stream.recv(count - len(data))
        if not chunk:
            raise ConnectionError("the proxy closed the connection during the handshake")
        data += chunk
    return data


async def _head(stream: ByteStream) -> bytes:
    head = b""
    while not head.endswith(b"\r\n\r\n"):
        if len(head) >= MAX_PROXY_HEAD:
            raise ConnectionError("the proxy's answer head is too long")
        head += await _exactly(stream, 1)
    return head


def _authority(address: IPAddress, port: int) -> str:
    return f"[{address}]:{port}" if isinstance(address, ipaddress.IPv6Address) else f"{address}:{port}"


async def _http_connect(proxy: UpstreamProxy, stream: ByteStream, address: IPAddress, port: int) -> None:
    authority = _authority(address, port)
    lines = [f"CONNECT {authority} HTTP/1.1", f"Host: {authority}"]
    if proxy.username is not None:
        token = base64.b64encode(f"{proxy.username}:{proxy.password or ''}".encode()).decode()
        lines.append(f"Proxy-Authorization: Basic {token}")
    await stream.send(("\r\n".join(lines) + "\r\n\r\n").encode())
    status_line = (await _head(stream)).split(b"\r\n", 1)[0].decode("latin-1")
    parts = status_line.split(" ", 2)
    if len(parts) < 2 or not parts[0].startswith("HTTP/") or not parts[1].isdigit():
        raise ConnectionError("the proxy's answer is not HTTP")
    status = int(parts[1])
    if status == 407:
        raise ConnectionError("it refused the credentials (407 Proxy Authentication Required)")
    if not 200 <= status < 300:
        raise ConnectionError(f"it answered {status} to CONNECT {authority}")


async def _socks5_connect(proxy: UpstreamProxy, stream: ByteStream, address: IPAddress, port: int) -> None:
    method = 2 if proxy.username is not None else 0
    await stream.send(bytes([5, 1, method]))
    version, chosen = await _exactly(stream, 2)
    if version != 5:
        raise ConnectionError("it does not speak SOCKS5")
    if chosen != method:
        raise ConnectionError("it accepts none of our authentication methods")
    if method == 2:
        user = (proxy.username or "").encode()
        secret = (proxy.password or "").encode()
        await stream.send(bytes([1, len(user)]) + user + bytes([len(secret)]) + secret)
        _, status = await _exactly(stream, 2)
        if status != 0:
            raise ConnectionError("it refused the credentials")
    kind = 4 if isinstance(address, ipaddress.IPv6Address) else 1
    await stream.send(bytes([5, 1, 0, kind]) + address.packed + struct.pack("!H", port))
    version, reply, _, bound_kind = await _exactly(stream, 4)
    if version != 5:
        raise ConnectionError("its answer is not SOCKS5")
    if reply != 0:
        raise ConnectionError(
            f"it could not connect to {_authority(address, port)} ({_SOCKS_REPLIES.get(reply, reply)})"
        )
    if bound_kind == 1:
        await _exactly(stream, 4 + 2)
    elif bound_kind == 4:
        await _exactly(stream, 16 + 2)
    elif bound_kind == 3:
        (length,) = await _exactly(stream, 1)
        await _exactly(stream, length + 2)
    else:
        raise ConnectionError("its answer has an unknown address type")


class ProxyRoute:
    """One owner's upstream proxy as its slot uses it. Only the owner's event loop touches it."""

    def __init__(self, proxy: UpstreamProxy) -> None:
        self.proxy = proxy
        self.bytes = 0
        """Bytes both ways through the proxy (what went through its tunnels), for ``proxyUsedMb``."""
        self.failures = 0
        self._failing = False
        self._listeners: list[FailureListener] = []

    def add_bytes(self, count: int) -> None:
        self.bytes += count

    def add_failure_listener(self, listener: FailureListener) -> Callable[[], None]:
        """``listener(proxy, reason)`` on the first failure of each streak (a success ends a streak)."""
        self._listeners.append(listener)

        def remove() -> None:
            with contextlib.suppress(ValueError):
                self._listeners.remove(listener)

        return remove

    def _failed(self, reason: str) -> ProxyFailed:
        self.failures += 1
        if not self._failing:
            self._failing = True
            logger.warning("Upstream proxy %s failed: %s", self.proxy.label, reason)
            for listener in list(self._listeners):
                try:
                    listener(self.proxy, reason)
                except Exception:
                    logger.exception("A proxy failure listener failed")
        return ProxyFailed(self.proxy, reason)

    async def proxy_addresses(self, rules: NetworkRules) -> list[IPAddress]:
        """The proxy's own addresses, checked like any destination (a refusal raises NetworkRefused)."""
        host, ip = self.proxy.host, None
        with contextlib.suppress(ValueError):
            ip = ipaddress.ip_address(host)
        return await rules.check_endpoint(Endpoint(host, self.proxy.port, ip))

    async def handshake(self, stream: ByteStream, address: IPAddress, port: int) -> None:
        """Ask the proxy, over ``stream`` (connected to it), for a tunnel to ``address:port``; ProxyFailed else."""
        try:
            async with asyncio.timeout(HANDSHAKE_TIMEOUT):
                if self.proxy.scheme == "socks5":
                    await _socks5_connect(self.proxy, stream, address, port)
                else:
                    await _http_connect(self.proxy, stream, address, port)
        except TimeoutError:
            raise self._failed(f"no answer to the handshake within {HANDSHAKE_TIMEOUT:.0f} s") from None
        except (ConnectionError, OSError) as exc:
            raise self._failed(str(exc) or type(exc).__name__) from None
        self._failing = False

    def unreachable(self, detail: str) -> ProxyFailed:
        """The error (reported once per streak) when no address of the proxy accepted a connection."""
        return self._failed(f"could not connect ({detail})")

    async def open(
        self,
        rules: NetworkRules,
        addresses: list[IPAddress],
        port: int,
        *,
        timeout: float,  # noqa: ASYNC109 - the connect budget alone; the handshake has its own
    ) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        """A tunnel to the first checked destination address (IPv4 first), through the proxy."""
        proxy_addresses = await self.proxy_addresses(rules)
        destination = sorted(addresses, key=lambda a: a.version)[0]
        errors: list[str] = []
        try:
            async with asyncio.timeout(timeout):
                for address in proxy_addresses:
                    try:
                        reader, writer = await asyncio.open_connection(str(address), self.proxy.port, limit=2**16)
                        break
                    except OSError as exc:
                        errors.append(exc.strerror or str(exc))
                else:
                    raise self.unreachable("; ".join(errors) or "no address")
        except TimeoutError:
            raise self.unreachable(f"no answer within {timeout:.0f} s") from None
        try:
            await self.handshake(StreamPair(reader, writer), destination, port)
        except BaseException:
            writer.transport.abort()
            raise
        return reader, writer
