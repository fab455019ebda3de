"""Real Chromium whose only proxy is the egress enforcer: what a page sees when it reaches a refused port.

Headless Chromium runs with ``--no-sandbox`` here only because this test runs outside any slot sandbox; the
flags that matter are the ones the slots use: ``--proxy-server`` and ``--proxy-bypass-list=<-loopback>``, so
even loopback goes through the enforcer.
"""

from __future__ import annotations

import html
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from playwright.async_api import Error as PlaywrightError, Page, async_playwright
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, PlainTextResponse, Response
from starlette.routing import Route

from openbrowse.network.egress import EgressEnforcer
from openbrowse.network.local import ReservedPorts
from openbrowse.network.policy import NetworkRules
from openbrowse.network.refusal import Refusal
from openbrowse.slots.chromium import BASE_FLAGS
from openbrowse.slots.probes import CdpVersionProbe
from openbrowse.slots.process import ManagedProcess
from tests.support.asgi_thread import ThreadedServer
from tests.support.display import chromium_binary, needs_chromium
from tests.support.ports import free_port

CHROMIUM = chromium_binary() or Path("chromium")
pytestmark = needs_chromium

PROBE_PAGE = """<!doctype html><html><head><title>probing</title></head><body>
<p>allowed: <span id="allowed">pending</span></p><p>refused: <span id="refused">pending</span></p>
<script>
async function probe(url) {
  try { const r = await fetch(url); return r.status + ":" + (await r.text()); }
  catch (e) { return "error:" + e.name; }
}
(async () => {
  document.getElementById("allowed").textContent = await probe(%(allowed)s);
  document.getElementById("refused").textContent = await probe(%(refused)s);
  document.title = "done";
})();
</script></body></html>"""


def data_app(name: str, hits: list[str]) -> Starlette:
    async def data(request: Request) -> Response:
        hits.append(request.url.path)
        return PlainTextResponse(name, headers={"Access-Control-Allow-Origin": "*"})

    return Starlette(routes=[Route("/data", data)])


def page_app(allowed_url: str, refused_url: str) -> Starlette:
    async def index(_: Request) -> Response:
        quoted = {"allowed": f'"{html.escape(allowed_url)}"', "refused": f'"{html.escape(refused_url)}"'}
        return HTMLResponse(PROBE_PAGE % quoted)

    return Starlette(routes=[Route("/", index)])


@asynccontextmanager
async def headless_chromium(proxy_port: int, profile: Path) -> AsyncIterator[int]:
    """Chromium proxied through ``proxy_port``; yields its DevTools port (reached directly, not proxied)."""
    cdp_port = free_port()
    argv = [
        str(CHROMIUM),
        "--headless",
        "--no-sandbox",
        f"--remote-debugging-port={cdp_port}",
        "--remote-debugging-address=127.0.0.1",
        f"--user-data-dir={profile}",
        f"--proxy-server=http://127.0.0.1:{proxy_port}",
        "--proxy-bypass-list=<-loopback>",
        "--force-webrtc-ip-handling-policy=disable_non_proxied_udp",
        *BASE_FLAGS,
        "about:blank",
    ]
    async with ManagedProcess("chromium", argv) as process:
        await process.wait_ready(CdpVersionProbe(cdp_port), within=30)
        yield cdp_port


async def body_text(page: Page) -> str:
    return (await page.inner_text("body")).strip()


async def test_a_page_reaches_what_the_rules_allow_and_sees_a_block_for_the_rest(tmp_path: Path) -> None:
    allowed_hits: list[str] = []
    refused_hits: list[str] = []
    with (
        ThreadedServer(data_app("allowed-data", allowed_hits)) as allowed,
        ThreadedServer(data_app("service-data", refused_hits)) as service,
        ThreadedServer(page_app(f"{allowed.url}/data", f"{service.url}/data")) as site,
    ):
        rules = NetworkRules("open", reserved=ReservedPorts(frozenset({service.port})))
        refusals: list[Refusal] = []
        async with EgressEnforcer(rules, label="chromium-test") as enforcer:
            enforcer.add_refusal_listener(refusals.append)
            proxy_port = await enforcer.listen_tcp()
            async with headless_chromium(proxy_port, tmp_path / "profile") as cdp_port, async_playwright() as pw:
                browser = await pw.chromium.connect_over_cdp(f"http://127.0.0.1:{cdp_port}")
                page = await browser.contexts[0].new_page()

                await page.goto(f"{site.url}/")
                await page.wait_for_function("document.title === 'done'", timeout=20_000)
                assert await page.inner_text("#allowed") == "200:allowed-data"
                assert await page.inner_text("#refused") == "error:TypeError"

                response = await page.goto(f"{service.url}/data")
                assert response is not None and response.status == 403
                assert await response.header_value("x-openbrowse-refused") == "service_port"
                assert await body_text(page) == (
                    f"Blocked by OpenBrowse network policy: 127.0.0.1:{service.port} is this service's own port "
                    "(never allowed)."
                )

                response = await page.goto("http://169.254.169.254/latest/meta-data/")
                assert response is not None and response.status == 403
                assert "169.254.169.254 is a link-local address (never allowed)" in await body_text(page)

                with pytest.raises(PlaywrightError, match="ERR_TUNNEL_CONNECTION_FAILED"):
                    await page.goto(f"https://127.0.0.1:{service.port}/data")
                await browser.close()

    assert allowed_hits == ["/data"]
    assert refused_hits == []  # nothing ever reached the "service"
    seen = {(r.host, r.port, r.rule) for r in refusals}
    assert ("127.0.0.1", service.port, "service_port") in seen
    assert ("169.254.169.254", 80, "link_local") in seen
    assert enforcer.stats.connections >= 4
