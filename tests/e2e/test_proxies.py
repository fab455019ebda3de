"""Upstream proxies end to end (spec §28.1): a real server whose ``PROXY_POOL`` names a real pproxy on loopback (HTTP
CONNECT and SOCKS5, both with authentication), raw browsers driven by Playwright over ``cdpUrl``, and sessions run
by the fake provider. pproxy's own log proves each route; a dead proxy gives an error page, a typed tool error and
one ``network`` event, and the fixture site never sees the request; the credentials are in no answer, feed, log
or metric.

One server for the module (one slot). Its pool: ``us`` = the HTTP proxy, ``de`` = the SOCKS5 one.
"""

from __future__ import annotations

import ssl
import subprocess
import threading
import uuid
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
import pytest
from playwright.async_api import Error as PlaywrightError, async_playwright

from tests.e2e.agent_support import agent_steps, create, data_of, messages, step_requests, token, wait_until_status
from tests.e2e.browser_support import create_browser, needs_display, stop_browser
from tests.e2e.servers import agent_env, api_client, running_server
from tests.fakes.llm_script import agent_step, done, navigate, run_code
from tests.fakes.llm_server import FakeProvider
from tests.fakes.site import FixtureSites
from tests.support import loopback
from tests.support.server import ServerProcess
from tests.support.upstream_proxy import UpstreamProxies, dead_port, upstream_proxies
from tests.support.waiting import wait_for

pytestmark = [pytest.mark.e2e, pytest.mark.display, needs_display]

USER = "e2e-proxy-user-9d"
PASSWORD = "e2e-proxy-pw-4b7f2a"
CUSTOM_PASSWORD = "custom-proxy-pw-61e0c3"
OPENSSL_SELF_SIGNED = [
    "openssl",
    "req",
    "-x509",
    "-newkey",
    "rsa:2048",
    "-nodes",
    "-days",
    "1",
    "-subj",
    "/CN=127.0.0.1",
]


@pytest.fixture(scope="module")
def upstream(tmp_path_factory: pytest.TempPathFactory) -> Iterator[UpstreamProxies]:
    with upstream_proxies(tmp_path_factory.mktemp("pproxy"), USER, PASSWORD) as running:
        yield running


@pytest.fixture(scope="module")
def server(
    tmp_path_factory: pytest.TempPathFactory, fake: FakeProvider, upstream: UpstreamProxies
) -> Iterator[ServerProcess]:
    pool = f"us={upstream.url('http')},de={upstream.url('socks5')}"
    env = agent_env(fake, PROXY_POOL=pool, PROXY_COST_PER_GB="1000")
    with running_server(tmp_path_factory.mktemp("proxies-home"), env) as process:
        yield process


@pytest.fixture
def http(server: ServerProcess) -> Iterator[httpx.Client]:
    with api_client(server) as client:
        yield client


def no_secret_in(text: str) -> None:
    for secret in (PASSWORD, CUSTOM_PASSWORD):
        assert secret not in text


def logged(condition: Callable[[], bool]) -> None:
    """pproxy writes its log line as it acts, not before its answer reaches us: wait for the line."""
    wait_for(lambda: condition() or None, 30, what="pproxy's log line")


def proxied(upstream: UpstreamProxies, scheme: str, site: FixtureSites) -> int:
    return upstream.tunnels(scheme).count(f"127.0.0.1:{site.port}")


# -- requests ------------------------------------------------------------------------------------------------------
def test_proxy_options_that_cannot_be_honoured_are_refused_in_one_sentence(http: httpx.Client) -> None:
    for path in ("/v3/sessions", "/v3/browsers"):
        unknown = http.post(path, json={"task": "x", "proxyCountryCode": "zz"})
        assert unknown.status_code == 422
        assert unknown.json() == {
            "detail": "No proxy for country 'zz' in this server's PROXY_POOL (available: de, us).",
            "code": "proxy_unavailable",
        }
        bad_port = http.post(path, json={"task": "x", "customProxy": {"host": "127.0.0.1", "port": 0}})
        assert bad_port.status_code == 422
        assert bad_port.json() == {"detail": "customProxy.port must be a whole number from 1 to 65535."}
        bad_scheme = http.post(path, json={"task": "x", "customProxy": {"host": "p", "port": 1, "scheme": "ftp"}})
        assert bad_scheme.json() == {"detail": "customProxy.scheme must be 'http' or 'socks5'."}
        both = http.post(
            path, json={"task": "x", "proxyCountryCode": "us", "customProxy": {"host": "p.example", "port": 8080}}
        )
        assert both.json() == {"detail": "Send either customProxy or proxyCountryCode, not both."}


def test_bu_only_fields_we_cannot_honour_get_one_system_event(server: ServerProcess, http: httpx.Client) -> None:
    asked = http.post("/v3/sessions", json={"agentmail": True, "codeMode": True, "useOwnKey": True})
    assert asked.status_code == 200
    events = [m for m in messages(server, asked.json()["id"]) if data_of(m).get("action") == "unsupported_option"]
    assert len(events) == 1 and data_of(events[0])["fields"] == ["agentmail", "codeMode"]
    assert "agentmail" in events[0]["summary"] and "codeMode" in events[0]["summary"]
    quiet = http.post("/v3/sessions", json={"agentmail": False, "enableScheduledTasks": None})
    assert [m for m in messages(server, quiet.json()["id"]) if data_of(m).get("action") == "unsupported_option"] == []


# -- raw browsers --------------------------------------------------------------------------------------------------
async def test_a_raw_browser_loads_pages_through_the_pool_proxy(
    http: httpx.Client, site: FixtureSites, upstream: UpstreamProxies
) -> None:
    created = create_browser(http, proxyCountryCode="US")
    assert created["proxyCountryCode"] == "us" and created["customProxy"] is None
    before = proxied(upstream, "http", site)
    async with async_playwright() as playwright:
        remote = await playwright.chromium.connect_over_cdp(created["cdpUrl"])
        page = remote.contexts[0].pages[0]
        await page.goto(f"{site.url}/product/red")
        assert "Red Gadget" in await page.content()
        await remote.close()
    logged(lambda: proxied(upstream, "http", site) > before)
    stopped = stop_browser(http, created["id"])
    assert stopped["proxyUsedMb"] != "0" and stopped["proxyCost"] != "0"
    assert http.get(f"/v3/browsers/{created['id']}").json()["proxyUsedMb"] == stopped["proxyUsedMb"]


async def test_a_raw_browser_with_its_own_socks5_proxy_shows_no_credentials(
    http: httpx.Client, server: ServerProcess, site: FixtureSites, upstream: UpstreamProxies
) -> None:
    custom = {"host": "127.0.0.1", "port": upstream.socks_port, "scheme": "socks5"}
    created = create_browser(http, customProxy={**custom, "username": USER, "password": PASSWORD})
    assert created["customProxy"] == {**custom, "hasUsername": True} and created["proxyCountryCode"] is None
    before = proxied(upstream, "socks5", site)
    async with async_playwright() as playwright:
        remote = await playwright.chromium.connect_over_cdp(created["cdpUrl"])
        page = remote.contexts[0].pages[0]
        await page.goto(f"{site.url}/product/blue")
        assert "Blue Widget" in await page.content()
        await remote.close()
    logged(lambda: proxied(upstream, "socks5", site) > before)
    fetched = http.get(f"/v3/browsers/{created['id']}")
    listed = http.get("/v3/browsers", params={"pageSize": 100})
    stop_browser(http, created["id"])
    for text in (fetched.text, listed.text, loopback.get(f"{server.base_url}/metrics").text, server.log()):
        no_secret_in(text)


async def test_a_dead_proxy_gives_an_error_page_and_never_a_direct_connection(
    http: httpx.Client, site: FixtureSites
) -> None:
    port = dead_port()
    created = create_browser(
        http, customProxy={"host": "127.0.0.1", "port": port, "username": "u", "password": CUSTOM_PASSWORD}
    )
    path = f"/product/dead-{uuid.uuid4().hex[:8]}"
    async with async_playwright() as playwright:
        remote = await playwright.chromium.connect_over_cdp(created["cdpUrl"])
        page = remote.contexts[0].pages[0]
        response = await page.goto(f"{site.url}{path}")  # plain http: the enforcer's own error page
        assert response is not None and response.status == 502
        shown = await page.inner_text("body")
        assert f"The upstream proxy 127.0.0.1:{port} failed" in shown and "never directly" in shown
        with pytest.raises(PlaywrightError, match="ERR_TUNNEL_CONNECTION_FAILED"):  # https: Chromium's error page
            await page.goto(f"https://127.0.0.1:{site.port}{path}")
        await remote.close()
    no_secret_in(shown)
    assert site.state.hosts_of(path) == []
    stop_browser(http, created["id"])


# -- sessions ------------------------------------------------------------------------------------------------------
def test_a_session_browses_and_fetches_through_the_pool_proxy(
    server: ServerProcess, fake: FakeProvider, site: FixtureSites, upstream: UpstreamProxies
) -> None:
    marker = token("PROXY")
    fake.script(
        marker,
        [
            navigate(f"{site.url}/product/green"),
            agent_step([{"http_fetch": {"url": f"{site.url}/prices.json"}}]),
            run_code(
                "viaproxy", f"answer = await fetch({site.url + '/prices.json'!r})\nprint('got', answer['status'])"
            ),
            done("seen"),
        ],
        when=agent_steps,
    )
    before = proxied(upstream, "socks5", site)
    session = create(server, task=f"{marker} Look at the green product.", proxyCountryCode="de")
    assert session["proxyCountryCode"] == "de" and session["customProxy"] is None
    finished = wait_until_status(server, session["id"], {"stopped", "error"})
    assert finished["status"] == "stopped" and finished["isTaskSuccessful"] is True
    requests = step_requests(fake, marker)
    assert "Green Gizmo" in requests[1].text and "8.25" in requests[2].text and "got 200" in requests[3].text
    logged(lambda: proxied(upstream, "socks5", site) >= before + 3)  # the page, http_fetch and the script's fetch
    assert finished["proxyUsedMb"] != "0" and finished["proxyCostUsd"] != "0"
    assert float(finished["totalCostUsd"]) >= float(finished["proxyCostUsd"])


def test_proxy_cost_counts_towards_max_cost_usd(server: ServerProcess, fake: FakeProvider, site: FixtureSites) -> None:
    marker = token("PROXYBUDGET")
    fake.script(
        marker,
        [agent_step([{"http_fetch": {"url": f"{site.url}/big"}}])],  # > 3 MB: > 3 USD at 1000 USD per GB
        then=agent_step([{"http_fetch": {"url": f"{site.url}/big"}}]),
        when=agent_steps,
    )
    session = create(server, task=f"{marker} Read the big page.", proxyCountryCode="us", maxCostUsd=1)
    finished = wait_until_status(server, session["id"], {"stopped", "error"})
    assert finished["failureKind"] == "budget_exceeded" and finished["stepCount"] == 1
    assert float(finished["llmCostUsd"]) < 1 <= float(finished["proxyCostUsd"]) <= float(finished["totalCostUsd"])


def test_a_keep_alive_follow_up_keeps_the_proxy(
    server: ServerProcess, fake: FakeProvider, site: FixtureSites, upstream: UpstreamProxies
) -> None:
    first, second = token("KEEP1"), token("KEEP2")
    # the follow-up's requests carry the first turn's marker too: its script goes first
    fake.script(second, [navigate(f"{site.url}/product/blue"), done("two")], when=agent_steps)
    fake.script(first, [navigate(f"{site.url}/product/red"), done("one")], when=agent_steps)
    session = create(server, task=f"{first} Look at red.", proxyCountryCode="us", keepAlive=True)
    wait_until_status(server, session["id"], {"idle"})
    before = proxied(upstream, "http", site)
    other = loopback.post(
        f"{server.v3}/sessions", json={"sessionId": session["id"], "task": "x", "proxyCountryCode": "de"}, timeout=30
    )
    assert other.status_code == 422 and "keeps the proxy it was created with" in other.json()["detail"]
    follow = create(server, sessionId=session["id"], task=f"{second} Now blue.")
    assert follow["proxyCountryCode"] == "us"
    wait_for(lambda: len(step_requests(fake, second)) >= 2 or None, 120, what="the follow-up's second step")
    idle = wait_until_status(server, session["id"], {"idle"})
    assert "Blue Widget" in step_requests(fake, second)[1].text
    logged(lambda: proxied(upstream, "http", site) > before)
    assert float(idle["proxyUsedMb"]) > float(session["proxyUsedMb"])
    stopped = loopback.post(f"{server.v3}/sessions/{session['id']}/stop", json={}, timeout=60)
    assert stopped.status_code == 200


def test_a_session_whose_proxy_is_dead_fails_loudly_and_leaks_nothing(
    server: ServerProcess, fake: FakeProvider, site: FixtureSites
) -> None:
    port = dead_port()
    marker = token("DEADPROXY")
    path = f"/product/dead-{uuid.uuid4().hex[:8]}"
    fake.script(
        marker,
        [
            navigate(f"{site.url}{path}"),
            agent_step([{"http_fetch": {"url": f"{site.url}{path}"}}]),
            done("gave up"),
        ],
        when=agent_steps,
    )
    custom: dict[str, Any] = {"host": "127.0.0.1", "port": port, "username": "dead-user", "password": CUSTOM_PASSWORD}
    session = create(server, task=f"{marker} Try the page.", customProxy=custom)
    assert session["customProxy"] == {"host": "127.0.0.1", "port": port, "scheme": "http", "hasUsername": True}
    finished = wait_until_status(server, session["id"], {"stopped", "error"})
    requests = step_requests(fake, marker)
    assert f"The upstream proxy 127.0.0.1:{port} failed" in requests[2].text  # the tool's typed error
    assert site.state.hosts_of(path) == []
    feed = messages(server, session["id"])
    failures = [m for m in feed if m["type"] == "event" and data_of(m).get("action") == "proxy_failed"]
    assert len(failures) == 1 and data_of(failures[0])["proxy"] == f"127.0.0.1:{port}"
    assert data_of(failures[0])["category"] == "network"
    metrics = loopback.get(f"{server.base_url}/metrics").text
    for text in (str(finished), str(feed), metrics, server.log(), str(requests)):
        no_secret_in(text)


# -- ignoreCertErrors ----------------------------------------------------------------------------------------------
class _Hello(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = b"<h1>self-signed hello</h1>"
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def self_signed_site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    """An HTTPS site whose certificate no browser trusts, as a TLS-intercepting proxy would present one."""
    folder = tmp_path_factory.mktemp("tls")
    key, cert = folder / "key.pem", folder / "cert.pem"
    subprocess.run(
        [*OPENSSL_SELF_SIGNED, "-keyout", str(key), "-out", str(cert)],
        check=True,
        capture_output=True,
    )
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Hello)
    httpd.socket = context.wrap_socket(httpd.socket, server_side=True)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield int(httpd.server_address[1])
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join()


async def test_ignore_cert_errors_holds_for_that_browser_only(
    http: httpx.Client, upstream: UpstreamProxies, self_signed_site: int
) -> None:
    proxy = {"host": "127.0.0.1", "port": upstream.http_port, "username": USER, "password": PASSWORD}
    url = f"https://127.0.0.1:{self_signed_site}/"
    for ignore in (True, False):
        created = create_browser(http, customProxy={**proxy, "ignoreCertErrors": ignore})
        async with async_playwright() as playwright:
            remote = await playwright.chromium.connect_over_cdp(created["cdpUrl"])
            page = remote.contexts[0].pages[0]
            if ignore:
                await page.goto(url)
                assert await page.inner_text("h1") == "self-signed hello"
            else:
                with pytest.raises(PlaywrightError, match="ERR_CERT_AUTHORITY_INVALID"):
                    await page.goto(url)
            await remote.close()
        stop_browser(http, created["id"])
    logged(lambda: upstream.tunnels("http").count(f"127.0.0.1:{self_signed_site}") >= 2)
