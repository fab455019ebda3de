"""An httpx transport whose every connection goes through an upstream proxy route (spec §28.1): ``http_fetch``
and the script helper's ``fetch()`` leave the same way as the slot's browser, never directly.

httpx is handed the checked address as the URL's host (:func:`openbrowse.network.hosts.url_for`), so the
network backend asks the proxy for a tunnel to exactly that address; TLS then runs inside the tunnel with the
name as SNI, as it would directly. Bytes both ways are counted on the route (``proxyUsedMb``).
"""

from __future__ import annotations

import ipaddress
import ssl
import typing
from collections.abc import Callable

import httpcore
import httpx

from openbrowse.network.policy import NetworkRules
from openbrowse.network.proxy_route import ProxyRoute

__all__ = ["proxied_client"]


class _Bytes:
    """An httpcore stream as the handshake's :class:`~openbrowse.network.proxy_route.ByteStream`."""

    def __init__(self, stream: httpcore.AsyncNetworkStream) -> None:
        self._stream = stream

    async def send(self, data: bytes) -> None:
        await self._stream.write(data)

    async def recv(self, max_bytes: int) -> bytes:
        return await self._stream.read(max_bytes)


class _Counted(httpcore.AsyncNetworkStream):
    def __init__(self, inner: httpcore.AsyncNetworkStream, count: Callable[[int], None]) -> None:
        self._inner = inner
        self._count = count

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:  # noqa: ASYNC109 - httpcore's API
        data = await self._inner.read(max_bytes, timeout)
        self._count(len(data))
        return data

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:  # noqa: ASYNC109 - httpcore's API
        await self._inner.write(buffer, timeout)
        self._count(len(buffer))

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def start_tls(
        self,
        ssl_context: ssl.SSLContext,
        server_hostname: str | None = None,
        timeout: float | None = None,  # noqa: ASYNC109 - httpcore's API
    ) -> httpcore.AsyncNetworkStream:
        return _Counted(await self._inner.start_tls(ssl_context, server_hostname, timeout), self._count)

    def get_extra_info(self, info: str) -> typing.Any:
        return self._inner.get_extra_info(info)


class _RouteBackend(httpcore.AsyncNetworkBackend):
    def __init__(self, route: ProxyRoute, rules: NetworkRules) -> None:
        self._route = route
        self._rules = rules
        self._inner = httpcore.AnyIOBackend()

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,  # noqa: ASYNC109 - httpcore's API
        local_address: str | None = None,  # noqa: ARG002 - the proxy is reached from anywhere
        socket_options: typing.Iterable[typing.Any] | None = None,  # noqa: ARG002
    ) -> httpcore.AsyncNetworkStream:
        destination = ipaddress.ip_address(host)  # the checked address, never a name the proxy resolves again
        errors: list[str] = []
        for address in await self._route.proxy_addresses(self._rules):
            try:
                stream = await self._inner.connect_tcp(str(address), self._route.proxy.port, timeout=timeout)
                break
            except (httpcore.ConnectError, httpcore.ConnectTimeout, OSError) as exc:
                errors.append(str(exc) or type(exc).__name__)
        else:
            raise self._route.unreachable("; ".join(errors) or "no address")
        try:
            await self._route.handshake(_Bytes(stream), destination, port)
        except BaseException:
            await stream.aclose()
            raise
        return _Counted(stream, self._route.add_bytes)

    async def sleep(self, seconds: float) -> None:
        await self._inner.sleep(seconds)


def proxied_client(route: ProxyRoute, rules: NetworkRules) -> httpx.AsyncClient:
    """A client like the direct one (no redirects, no environment), connecting through ``route`` only."""
    context = httpx.create_ssl_context()
    if route.proxy.ignore_cert_errors:  # the proxy's TLS interception certificate is accepted (spec §28.1)
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    transport = httpx.AsyncHTTPTransport()
    transport._pool = httpcore.AsyncConnectionPool(ssl_context=context, network_backend=_RouteBackend(route, rules))
    return httpx.AsyncClient(transport=transport, follow_redirects=False, trust_env=False)
