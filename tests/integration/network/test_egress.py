"""The egress enforcer with real clients and real servers on loopback: forwarding, tunnels, WebSockets, refusals,
DNS pinning and its bounds."""

from __future__ import annotations

import asyncio
import dataclasses
import ipaddress
import os
import socket
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
from websockets.asyncio.client import connect as ws_connect

from openbrowse.network import egress
from openbrowse.network.egress import EgressEnforcer
from openbrowse.network.hosts import IPAddress
from openbrowse.network.local import ReservedPorts
from openbrowse.network.policy import NetworkRules
from openbrowse.network.refusal import Refusal
from tests.integration.network.egress_support import (
    WITHIN,
    exchange,
    masked_text_frame,
    site_app,
    tcp_echo_server,
    websocket_echo_server,
    websocket_key,
)
from tests.support.asgi_thread import ThreadedServer
from tests.support.ports import free_port


@pytest.fixture
async def proxy() -> AsyncIterator[EgressEnforcer]:
    async with EgressEnforcer(NetworkRules("open"), label="test") as enforcer:
        await enforcer.listen_tcp()
        yield enforcer


def client_for(enforcer: EgressEnforcer) -> httpx.AsyncClient:
    return httpx.AsyncClient(proxy=f"http://127.0.0.1:{enforcer.tcp_ports[0]}", trust_env=False, timeout=WITHIN)


# -- forwarding ---------------------------------------------------------------------------------------------------
async def test_plain_http_is_forwarded_in_origin_form_one_request_per_connection(
    proxy: EgressEnforcer, site: ThreadedServer
) -> None:
    async with client_for(proxy) as client:
        response = await client.post(f"http://LOCALHOST.:{site.port}/echo?x=1", content="hello")
    assert response.status_code == 200 and response.headers["connection"] == "close"
    assert response.json() == {
        "name": "site",
        "host": f"localhost:{site.port}",
        "method": "POST",
        "path": "/echo",
        "query": "x=1",
        "body": "hello",
        "connection": "close",
        "proxy": None,
    }
    assert proxy.stats.bytes_sent > 0 and proxy.stats.bytes_received > 0


async def test_a_second_request_on_the_same_connection_never_reaches_another_host(
    proxy: EgressEnforcer, site: ThreadedServer
) -> None:
    with ThreadedServer(site_app("other")) as other:
        first = f"GET http://127.0.0.1:{site.port}/who HTTP/1.1\r\nHost: 127.0.0.1:{site.port}\r\n\r\n"
        second = f"GET http://127.0.0.1:{other.port}/who HTTP/1.1\r\nHost: 127.0.0.1:{other.port}\r\n\r\n"
        answer = await exchange(proxy.tcp_ports[0], (first + second).encode())
    assert answer.count(b"HTTP/1.1 ") == 1 and answer.endswith(b"site") and b"other" not in answer


async def test_connect_tunnels_bytes_both_ways(proxy: EgressEnforcer) -> None:
    async with tcp_echo_server() as echo, asyncio.timeout(WITHIN):
        reader, writer = await asyncio.open_connection("127.0.0.1", proxy.tcp_ports[0])
        writer.write(f"CONNECT localhost:{echo} HTTP/1.1\r\nHost: localhost:{echo}\r\n\r\n".encode())
        assert await reader.readuntil(b"\r\n\r\n") == b"HTTP/1.1 200 Connection Established\r\n\r\n"
        writer.write(b"ping through the tunnel")
        assert await reader.readexactly(23) == b"ping through the tunnel"
        writer.write_eof()
        assert await reader.read() == b""
        writer.close()


async def test_websockets_pass_through_connect_and_through_an_absolute_form_upgrade(proxy: EgressEnforcer) -> None:
    port = proxy.tcp_ports[0]
    async with websocket_echo_server() as ws_port:
        async with ws_connect(f"ws://127.0.0.1:{ws_port}/", proxy=f"http://127.0.0.1:{port}") as socket_:
            await socket_.send("over connect")
            assert await socket_.recv() == "echo:over connect"
        async with asyncio.timeout(WITHIN):
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(
                (
                    f"GET http://127.0.0.1:{ws_port}/chat HTTP/1.1\r\nHost: 127.0.0.1:{ws_port}\r\n"
                    f"Upgrade: websocket\r\nConnection: keep-alive, Upgrade\r\nProxy-Connection: keep-alive\r\n"
                    f"Sec-WebSocket-Key: {websocket_key()}\r\nSec-WebSocket-Version: 13\r\n\r\n"
                ).encode()
            )
            head = await reader.readuntil(b"\r\n\r\n")
            assert head.startswith(b"HTTP/1.1 101 ") and b"Upgrade: websocket" in head
            writer.write(masked_text_frame("hi"))
            assert await reader.readexactly(9) == b"\x81\x07echo:hi"
            writer.close()


# -- refusals -----------------------------------------------------------------------------------------------------
def assert_blocked(response: httpx.Response, rule: str, reason: str) -> None:
    assert response.status_code == 403
    assert response.headers["x-openbrowse-refused"] == rule
    assert f"Blocked by OpenBrowse network policy: {reason}" in response.text


async def test_refusals_answer_403_with_the_rule_and_reach_the_listener(site: ThreadedServer) -> None:
    rules = NetworkRules("open", reserved=ReservedPorts(frozenset({site.port})))
    refusals: list[Refusal] = []
    async with EgressEnforcer(rules) as enforcer:
        proxy_port = await enforcer.listen_tcp()
        remove = enforcer.add_refusal_listener(refusals.append)
        async with client_for(enforcer) as client:
            service = await client.get(f"http://127.0.0.1:{site.port}/echo")
            assert_blocked(
                service, "service_port", f"127.0.0.1:{site.port} is this service's own port (never allowed)."
            )
            metadata = await client.get("http://169.254.169.254/latest/meta-data/")
            assert_blocked(metadata, "link_local", "169.254.169.254 is a link-local address (never allowed).")
            devtools = await client.get("http://localhost:9222/json/list")
            assert_blocked(devtools, "slot_endpoint", "localhost:9222 -> ")
        tunnels = [
            (f"127.0.0.1:{site.port}", "service_port"),
            ("[fd00:ec2::254]:80", "metadata"),
            (f"127.0.0.1:{proxy_port}", "service_port"),  # the proxy itself
            ("0x7f.1:5910", "slot_endpoint"),
        ]
        for authority, rule in tunnels:
            answer = await exchange(proxy_port, f"CONNECT {authority} HTTP/1.1\r\nHost: {authority}\r\n\r\n".encode())
            assert answer.startswith(b"HTTP/1.1 403 Forbidden\r\n"), authority
            assert f"X-OpenBrowse-Refused: {rule}".encode() in answer, authority
        remove()
        async with client_for(enforcer) as client:
            assert (await client.get("http://169.254.169.254/")).status_code == 403
    assert [(r.host, r.port, r.rule) for r in refusals] == [
        ("127.0.0.1", site.port, "service_port"),
        ("169.254.169.254", 80, "link_local"),
        ("localhost", 9222, "slot_endpoint"),
        ("127.0.0.1", site.port, "service_port"),
        ("fd00:ec2::254", 80, "metadata"),
        ("127.0.0.1", proxy_port, "service_port"),
        ("127.0.0.1", 5910, "slot_endpoint"),
    ]
    assert refusals[0].reason == f"127.0.0.1:{site.port} is this service's own port (never allowed)."
    assert enforcer.stats.refused == 8


async def test_public_only_refuses_loopback_and_its_holes_open_it(site: ThreadedServer) -> None:
    async with EgressEnforcer(NetworkRules.build("public-only", f"localhost:{site.port}")) as enforcer:
        await enforcer.listen_tcp()
        async with client_for(enforcer) as client:
            refused = await client.get(f"http://127.0.0.1:{site.port}/who")
            assert_blocked(refused, "public_only", "127.0.0.1 is a loopback address (NETWORK_POLICY=public-only).")
            allowed = await client.get(f"http://localhost:{site.port}/who")
            assert allowed.status_code == 200 and allowed.text == "site"


async def test_dns_answers_are_resolved_once_and_the_checked_address_is_the_one_connected() -> None:
    """A rebinding name answers an allowed address to the check and loopback afterwards: the connection must go
    to the checked address, so the page reaches the allowed server and never the loopback one."""
    allowed = ThreadedServer(site_app("allowed"), host="127.0.0.2")
    loopback = ThreadedServer(site_app("loopback"), host="127.0.0.1", port=allowed.port)
    with allowed, loopback:
        answers = [ipaddress.ip_address("127.0.0.2"), ipaddress.ip_address("127.0.0.1")]
        asked: list[str] = []

        async def rebinding(host: str, port: int) -> list[IPAddress]:
            asked.append(host)
            return [answers[min(len(asked), 2) - 1]]

        rules = dataclasses.replace(NetworkRules.build("public-only", "127.0.0.2"), resolver=rebinding)
        async with EgressEnforcer(rules) as enforcer:
            await enforcer.listen_tcp()
            async with client_for(enforcer) as client:
                first = await client.get(f"http://rebind.test:{loopback.port}/who")
                assert (first.status_code, first.text, asked) == (200, "allowed", ["rebind.test"])
                second = await client.get(f"http://rebind.test:{loopback.port}/who")
                assert_blocked(second, "public_only", "rebind.test -> 127.0.0.1 is a loopback address")
                assert asked == ["rebind.test", "rebind.test"]


# -- bounds and faults --------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("request_bytes", "status"),
    [
        (b"GET http://example.com/ HTTP/1.1\r\nX-Big: " + b"a" * 40_000 + b"\r\n\r\n", b"431"),
        (b"GET http://example.com/ HTTP/1.1\r\n" + b"X-A: b\r\n" * 150 + b"\r\n", b"431"),
        (b"GET http://example.com/ HTTP/1.1\r\nBad Header: x\r\n\r\n", b"400"),
        (b"GET http://example.com/ HTTP/1.1\r\nX: a\r\n folded\r\n\r\n", b"400"),
        (b"GET / HTTP/1.1\r\nHost: example.com\r\n\r\n", b"400"),
        (b"GET https://example.com/ HTTP/1.1\r\n\r\n", b"400"),
        (b"CONNECT example.com HTTP/1.1\r\n\r\n", b"400"),
        (b"CONNECT 0x100000000:443 HTTP/1.1\r\n\r\n", b"400"),
        (b"GET http://no-such-host.invalid/ HTTP/1.1\r\n\r\n", b"502"),
        (b"GET http://exa mple.com/ HTTP/1.1\r\n\r\n", b"400"),
    ],
)
async def test_malformed_and_oversized_heads_get_a_clear_answer(
    proxy: EgressEnforcer, request_bytes: bytes, status: bytes
) -> None:
    answer = await exchange(proxy.tcp_ports[0], request_bytes)
    assert answer.startswith(b"HTTP/1.1 " + status), answer[:200]


async def test_an_idle_handshake_is_answered_408(monkeypatch: pytest.MonkeyPatch, proxy: EgressEnforcer) -> None:
    monkeypatch.setattr(egress, "HEAD_TIMEOUT", 0.2)
    answer = await exchange(proxy.tcp_ports[0], b"GET http://example.com/ HTTP/1.1\r\nHost: exa")
    assert answer.startswith(b"HTTP/1.1 408 Request Timeout")


async def test_an_upstream_that_refuses_the_connection_is_502(proxy: EgressEnforcer) -> None:
    closed = free_port()
    for request in (f"CONNECT 127.0.0.1:{closed} HTTP/1.1\r\n\r\n", f"GET http://127.0.0.1:{closed}/ HTTP/1.1\r\n\r\n"):
        answer = await exchange(proxy.tcp_ports[0], request.encode())
        assert answer.startswith(b"HTTP/1.1 502 Bad Gateway") and b"Could not connect to 127.0.0.1:" in answer


def _bound_socket(path: Path) -> socket.socket:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.bind(str(path))
    return sock


async def test_the_unix_socket_serves_its_slots_uid(tmp_path: Path, site: ThreadedServer) -> None:
    path = tmp_path / "egress.sock"
    async with EgressEnforcer(NetworkRules("open")) as enforcer:
        await enforcer.listen_unix(_bound_socket(path), peer_uid=os.geteuid())
        request = f"GET http://127.0.0.1:{site.port}/who HTTP/1.1\r\nHost: x\r\n\r\n".encode()
        answer = await exchange(path, request)
        assert answer.startswith(b"HTTP/1.1 200 OK") and answer.endswith(b"site")


async def test_a_connection_from_another_uid_is_closed_unanswered(tmp_path: Path, site: ThreadedServer) -> None:
    """SO_PEERCRED: only the slot's own uid may use its enforcer (here the slot is uid 65534 and we are not)."""
    path = tmp_path / "egress.sock"
    async with EgressEnforcer(NetworkRules("open")) as enforcer:
        await enforcer.listen_unix(_bound_socket(path), peer_uid=65534 if os.geteuid() != 65534 else 0)
        request = f"GET http://127.0.0.1:{site.port}/who HTTP/1.1\r\nHost: x\r\n\r\n".encode()
        try:
            answer = await exchange(path, request)
        except ConnectionError:
            answer = b""
        assert answer == b""
        assert (enforcer.stats.connections, enforcer.stats.refused_peers) == (0, 1)


async def test_aclose_ends_open_tunnels_and_stops_listening() -> None:
    enforcer = EgressEnforcer(NetworkRules("open"))
    port = await enforcer.listen_tcp()
    async with tcp_echo_server() as echo, asyncio.timeout(WITHIN):
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(f"CONNECT 127.0.0.1:{echo} HTTP/1.1\r\n\r\n".encode())
        await reader.readuntil(b"\r\n\r\n")
        writer.write(b"x")
        assert await reader.readexactly(1) == b"x"
        await enforcer.aclose()
        assert await reader.read() == b""
        writer.close()
        with pytest.raises(ConnectionRefusedError):
            await asyncio.open_connection("127.0.0.1", port)
    assert not enforcer.running
    await NetworkRules("open").check(f"http://127.0.0.1:{port}/")  # its port is no longer reserved


async def test_connections_beyond_the_cap_are_answered_503() -> None:
    async with EgressEnforcer(NetworkRules("open"), max_connections=1) as enforcer:
        port = await enforcer.listen_tcp()
        async with asyncio.timeout(WITHIN):
            _, idle = await asyncio.open_connection("127.0.0.1", port)
            while enforcer.stats.connections < 1:
                await asyncio.sleep(0.01)
            answer = await exchange(port, b"GET http://example.com/ HTTP/1.1\r\n\r\n")
            idle.close()
    assert answer.startswith(b"HTTP/1.1 503 Service Unavailable")


async def test_an_exempt_url_opens_exactly_one_get_on_a_refused_port(site: ThreadedServer) -> None:
    rules = NetworkRules("open", reserved=ReservedPorts(frozenset({site.port})))
    async with EgressEnforcer(rules, exempt_urls=[f"{site.url}/who"]) as enforcer:
        await enforcer.listen_tcp()
        async with client_for(enforcer) as client:
            page = await client.get(f"{site.url}/who")
            assert (page.status_code, page.text) == (200, "site")
            assert (await client.get(f"{site.url}/echo")).status_code == 403
            assert (await client.get(f"{site.url}/who?x=1")).status_code == 403
            assert (await client.post(f"{site.url}/who")).status_code == 403
