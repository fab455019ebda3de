"""Server-side fetches under the network policy against real local servers: redirects, pinning, refusals."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import Route

from openbrowse.agent.safe_fetch import FetchFailed, fetch
from openbrowse.network.local import ReservedPorts
from openbrowse.network.policy import NetworkRefused, NetworkRules
from tests.support.asgi_thread import ThreadedServer


def app() -> Starlette:
    async def echo(request: Request) -> Response:
        return JSONResponse(
            {
                "host": request.headers.get("host"),
                "method": request.method,
                "body": (await request.body()).decode(),
                "cookie": request.headers.get("cookie"),
            }
        )

    async def redirect(request: Request) -> Response:
        return RedirectResponse(request.query_params["to"], status_code=int(request.query_params.get("code", 302)))

    async def loop(request: Request) -> Response:
        return RedirectResponse("/loop", status_code=302)

    return Starlette(
        routes=[
            Route("/echo", echo, methods=["GET", "POST"]),
            Route("/redirect", redirect, methods=["GET", "POST"]),
            Route("/loop", loop),
        ]
    )


@pytest.fixture(scope="module")
def server() -> Iterator[ThreadedServer]:
    with ThreadedServer(app()) as running:
        yield running


async def test_a_request_reaches_the_checked_address_with_the_original_host(server: ThreadedServer) -> None:
    response = await fetch(NetworkRules("open"), f"http://localhost:{server.port}/echo", method="post", body="hi")
    assert response.status == 200 and response.content_type == "application/json"
    assert response.text() == f'{{"host":"localhost:{server.port}","method":"POST","body":"hi","cookie":null}}'


async def test_redirects_are_followed_and_each_hop_is_rechecked(server: ThreadedServer) -> None:
    open_rules = NetworkRules("open")
    hop = f"http://127.0.0.1:{server.port}/redirect?code=303&to=/echo"
    response = await fetch(open_rules, hop, method="POST", body="dropped", headers={"Cookie": "a=1"})
    assert response.redirects == [hop] and '"method":"GET"' in response.text() and '"cookie":"a=1"' in response.text()
    cross = f"http://localhost:{server.port}/redirect?to=http://127.0.0.1:{server.port}/echo"
    response = await fetch(open_rules, cross, headers={"Cookie": "a=1"})
    assert '"cookie":null' in response.text()

    holes = NetworkRules.build("public-only", "localhost")
    with pytest.raises(NetworkRefused, match=r": 127\.0\.0\.1 is a loopback address"):
        await fetch(holes, cross)
    to_metadata = f"http://127.0.0.1:{server.port}/redirect?to=http://169.254.169.254/latest/meta-data/"
    with pytest.raises(NetworkRefused, match="link-local"):
        await fetch(open_rules, to_metadata)
    with pytest.raises(FetchFailed, match="More than 10 redirects"):
        await fetch(open_rules, f"http://127.0.0.1:{server.port}/loop")


async def test_refusals_and_failures_are_quick_and_clear(server: ThreadedServer) -> None:
    with pytest.raises(NetworkRefused, match=r"127\.0\.0\.1 is a loopback address \(NETWORK_POLICY=public-only\)"):
        await fetch(NetworkRules("public-only"), f"http://0x7f.1:{server.port}/echo")
    with pytest.raises(FetchFailed, match="Could not connect"):
        await fetch(NetworkRules("open"), "http://127.0.0.1:9/")


async def test_the_service_port_is_refused_even_behind_a_redirect_and_under_open(server: ThreadedServer) -> None:
    service_port = 47999  # refused before any connection is tried, so nothing needs to listen there
    rules = NetworkRules.build("open", "*", reserved=ReservedPorts(frozenset({service_port})))
    with pytest.raises(NetworkRefused, match=r"\[::ffff:7f00:1\]:47999 is this service's own port \(never allowed\)"):
        await fetch(rules, f"http://[::ffff:7f00:1]:{service_port}/v3/sessions")
    hop = f"http://127.0.0.1:{server.port}/redirect?to=http://localhost:{service_port}/v3/sessions"
    with pytest.raises(NetworkRefused, match=r"localhost:47999 -> .* is this service's own port") as caught:
        await fetch(rules, hop)
    assert caught.value.rule == "service_port"
    with pytest.raises(NetworkRefused, match="a browser slot's DevTools port"):
        await fetch(rules, f"http://127.0.0.1:{server.port}/redirect?to=http://0x7f.1:9223/json/list")
