"""The egress enforcer and the server-side fetch chained through a real upstream proxy (pproxy, HTTP CONNECT and
SOCKS5 with authentication, spec §28.1): the proxy's own log proves the route, a failing proxy is a clear error
and never a direct connection, and the network policy still checks the proxy's own address."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Iterator

import httpx
import pytest
from websockets.asyncio.client import connect as ws_connect

from openbrowse.agent.safe_fetch import FetchFailed, fetch
from openbrowse.network.egress import EgressEnforcer
from openbrowse.network.policy import NetworkRules
from openbrowse.network.proxy_route import ProxyRoute
from openbrowse.network.refusal import Refusal
from openbrowse.network.upstream import UpstreamProxy, parse_proxy_url
from tests.integration.network.egress_support import WITHIN, tcp_echo_server, websocket_echo_server, websocket_key
from tests.support.asgi_thread import ThreadedServer
from tests.support.upstream_proxy import UpstreamProxies, dead_port, upstream_proxies
from tests.support.waiting import wait_for

USER = "chain-user-31"
PASSWORD = "chain-pw-8c4e1b"


def logged(condition: Callable[[], bool]) -> None:
    """pproxy writes its log line as it acts, not before its answer reaches us: wait for the line."""
    wait_for(lambda: condition() or None, WITHIN, what="pproxy's log line")


@pytest.fixture(scope="module")
def upstream(tmp_path_factory: pytest.TempPathFactory) -> Iterator[UpstreamProxies]:
    with upstream_proxies(tmp_path_factory.mktemp("pproxy"), USER, PASSWORD) as running:
        yield running


@pytest.fixture
async def enforcer() -> AsyncIterator[EgressEnforcer]:
    async with EgressEnforcer(NetworkRules("open"), label="chain") as running:
        await running.listen_tcp()
        yield running


def client_for(enforcer: EgressEnforcer) -> httpx.AsyncClient:
    return httpx.AsyncClient(proxy=f"http://127.0.0.1:{enforcer.tcp_ports[0]}", trust_env=False, timeout=WITHIN)


@pytest.mark.parametrize("scheme", ["http", "socks5"])
async def test_page_traffic_goes_through_the_upstream_proxy(
    enforcer: EgressEnforcer, site: ThreadedServer, upstream: UpstreamProxies, scheme: str
) -> None:
    route = ProxyRoute(parse_proxy_url(upstream.url(scheme)))
    enforcer.use_route(route)
    before = upstream.tunnels(scheme).count(f"127.0.0.1:{site.port}")
    async with client_for(enforcer) as client:
        response = await client.get(f"http://localhost:{site.port}/echo")
    assert response.status_code == 200 and response.json()["host"] == f"localhost:{site.port}"
    # the proxy was handed the address the enforcer checked, never the name to resolve again
    logged(lambda: upstream.tunnels(scheme).count(f"127.0.0.1:{site.port}") == before + 1)
    assert route.bytes >= len(response.content)


async def test_connect_tunnels_go_through_the_upstream_proxy_too(
    enforcer: EgressEnforcer, upstream: UpstreamProxies
) -> None:
    route = ProxyRoute(parse_proxy_url(upstream.url("http")))
    enforcer.use_route(route)
    async with tcp_echo_server() as echo, asyncio.timeout(WITHIN):
        reader, writer = await asyncio.open_connection("127.0.0.1", enforcer.tcp_ports[0])
        writer.write(f"CONNECT 127.0.0.1:{echo} HTTP/1.1\r\nHost: 127.0.0.1:{echo}\r\n\r\n".encode())
        assert (await reader.readuntil(b"\r\n\r\n")).startswith(b"HTTP/1.1 200")
        writer.write(b"ping")
        assert await reader.readexactly(4) == b"ping"
        writer.close()
    logged(lambda: f"127.0.0.1:{echo}" in upstream.tunnels("http"))
    assert route.bytes >= 8


@pytest.mark.parametrize("scheme", ["http", "socks5"])
async def test_websockets_go_through_the_upstream_proxy(
    enforcer: EgressEnforcer, upstream: UpstreamProxies, scheme: str
) -> None:
    enforcer.use_route(ProxyRoute(parse_proxy_url(upstream.url(scheme))))
    port = enforcer.tcp_ports[0]
    async with websocket_echo_server() as ws_port:
        async with ws_connect(f"ws://127.0.0.1:{ws_port}/", proxy=f"http://127.0.0.1:{port}") as socket_:
            await socket_.send("over connect")
            assert await socket_.recv() == "echo:over connect"
        async with asyncio.timeout(WITHIN):  # a plain ws:// upgrade in absolute form, as Chromium sends it
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(
                (
                    f"GET http://127.0.0.1:{ws_port}/chat HTTP/1.1\r\nHost: 127.0.0.1:{ws_port}\r\n"
                    f"Upgrade: websocket\r\nConnection: Upgrade\r\n"
                    f"Sec-WebSocket-Key: {websocket_key()}\r\nSec-WebSocket-Version: 13\r\n\r\n"
                ).encode()
            )
            assert (await reader.readuntil(b"\r\n\r\n")).startswith(b"HTTP/1.1 101")
            writer.close()
        logged(lambda: upstream.tunnels(scheme).count(f"127.0.0.1:{ws_port}") == 2)


@pytest.mark.parametrize("scheme", ["http", "socks5"])
async def test_refused_credentials_fail_loudly_once_and_never_go_direct(
    enforcer: EgressEnforcer, site: ThreadedServer, upstream: UpstreamProxies, scheme: str
) -> None:
    route = ProxyRoute(parse_proxy_url(upstream.url(scheme, password="wrong-pw-2f")))
    reported: list[tuple[str, str]] = []
    route.add_failure_listener(lambda proxy, reason: reported.append((proxy.label, reason)))
    enforcer.use_route(route)
    refused_before = upstream.refused_logins()
    async with client_for(enforcer) as client:
        first = await client.get(f"http://127.0.0.1:{site.port}/echo")
        second = await client.get(f"http://127.0.0.1:{site.port}/echo")
    port = upstream.http_port if scheme == "http" else upstream.socks_port
    for response in (first, second):
        assert response.status_code == 502
        assert f"The upstream proxy 127.0.0.1:{port} failed" in response.text
        assert "never directly" in response.text and "wrong-pw-2f" not in response.text
    logged(lambda: upstream.refused_logins() == refused_before + 2)
    assert [label for label, _ in reported] == [f"127.0.0.1:{port}"]  # one report per failure streak


async def test_a_dead_proxy_is_a_502_naming_it(enforcer: EgressEnforcer, site: ThreadedServer) -> None:
    port = dead_port()
    enforcer.use_route(ProxyRoute(UpstreamProxy("http", "127.0.0.1", port, "someone", "dead-pw-77")))
    async with client_for(enforcer) as client:
        response = await client.get(f"http://127.0.0.1:{site.port}/echo")
    assert response.status_code == 502 and f"127.0.0.1:{port} failed: could not connect" in response.text
    assert "dead-pw-77" not in response.text


async def test_the_policy_checks_the_proxys_own_address(site: ThreadedServer, upstream: UpstreamProxies) -> None:
    refusals: list[Refusal] = []
    async with EgressEnforcer(NetworkRules.build("public-only", f"127.0.0.1:{site.port}"), label="strict") as strict:
        await strict.listen_tcp()
        strict.add_refusal_listener(refusals.append)
        strict.use_route(ProxyRoute(parse_proxy_url(upstream.url("http"))))
        before = len(upstream.tunnels("http"))
        async with client_for(strict) as client:
            response = await client.get(f"http://127.0.0.1:{site.port}/echo")
    assert response.status_code == 403 and response.headers["x-openbrowse-refused"] == "public_only"
    assert [(r.host, r.port) for r in refusals] == [("127.0.0.1", upstream.http_port)]
    assert len(upstream.tunnels("http")) == before


async def test_use_route_closes_connections_opened_before(enforcer: EgressEnforcer, upstream: UpstreamProxies) -> None:
    async with tcp_echo_server() as echo, asyncio.timeout(WITHIN):
        reader, writer = await asyncio.open_connection("127.0.0.1", enforcer.tcp_ports[0])
        writer.write(f"CONNECT 127.0.0.1:{echo} HTTP/1.1\r\n\r\n".encode())
        assert (await reader.readuntil(b"\r\n\r\n")).startswith(b"HTTP/1.1 200")
        enforcer.use_route(ProxyRoute(parse_proxy_url(upstream.url("http"))))
        assert await reader.read() == b""  # the direct tunnel made before the proxy was set does not go on
        writer.close()


@pytest.mark.parametrize("scheme", ["http", "socks5"])
async def test_server_side_fetches_go_through_the_upstream_proxy(
    site: ThreadedServer, upstream: UpstreamProxies, scheme: str
) -> None:
    route = ProxyRoute(parse_proxy_url(upstream.url(scheme)))
    before = upstream.tunnels(scheme).count(f"127.0.0.1:{site.port}")
    response = await fetch(NetworkRules("open"), f"http://localhost:{site.port}/echo?via=fetch", route=route)
    assert response.status == 200 and b'"query":"via=fetch"' in response.body
    logged(lambda: upstream.tunnels(scheme).count(f"127.0.0.1:{site.port}") == before + 1)
    assert route.bytes >= len(response.body)


async def test_a_failing_proxy_is_a_typed_fetch_error(site: ThreadedServer, upstream: UpstreamProxies) -> None:
    route = ProxyRoute(parse_proxy_url(upstream.url("socks5", password="nope-pw-19")))
    with pytest.raises(FetchFailed) as failed:
        await fetch(NetworkRules("open"), f"http://127.0.0.1:{site.port}/echo", route=route)
    assert f"The upstream proxy 127.0.0.1:{upstream.socks_port} failed" in str(failed.value)
    assert "nope-pw-19" not in str(failed.value)
