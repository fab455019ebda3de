"""The dashboard's own login (spec §25.2) in a real browser, against a real server with API_KEY and its own
DASHBOARD_PASSWORD: sign in with the form, use the pages (their scripts call the API with the cookie), sign out,
and a foreign page served on another port of the same host (the same *site*, so the SameSite=Strict cookie is
sent along) cannot use the cookie by any of the ways a page has: fetch with credentials, a form post, an image,
a navigation, or a forged logout.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from playwright.async_api import Browser, BrowserContext, Page, Request as PlaywrightRequest, async_playwright
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse
from starlette.routing import Route

from tests.e2e.browser_support import ARTIFACTS
from tests.e2e.servers import server_fixture
from tests.support import loopback
from tests.support.asgi_thread import ThreadedServer
from tests.support.server import ServerProcess

pytestmark = pytest.mark.e2e

API_KEY = "login-api-key"
PASSWORD = "login-dashboard-pw"
AUTH = {"Authorization": f"Bearer {API_KEY}"}
CHROMIUM = "/usr/bin/chromium"
CROSS_SITE = "Another site's page may not use the dashboard's credentials"
CSRF_REFUSED = "A call that changes something needs the dashboard's X-CSRF-Token header with its login cookie"


server = server_fixture({"API_KEY": API_KEY, "DASHBOARD_PASSWORD": PASSWORD})


@pytest.fixture
async def context() -> AsyncIterator[BrowserContext]:
    async with async_playwright() as playwright:
        browser: Browser = await playwright.chromium.launch(
            executable_path=CHROMIUM, headless=True, args=["--no-sandbox"]
        )
        try:
            yield await browser.new_context()
        finally:
            await browser.close()


def total_sessions(server: ServerProcess) -> int:
    return int(loopback.get(f"{server.v3}/sessions", headers=AUTH).json()["total"])


async def log_in(page: Page, server: ServerProcess, path: str = "/", password: str = PASSWORD) -> None:
    await page.goto(server.base_url + path)
    await page.fill("#login-user", "admin")
    await page.fill("#login-password", password)
    await page.click("#login-form button[type=submit]")


def attacker_site(target: str) -> Starlette:
    """A page that tries everything a page can do with the target's ambient cookie."""
    attempts = f"""<!doctype html><meta charset=utf-8><title>Free prizes</title>
<iframe name=sink></iframe>
<form id=create method=post action="{target}/v3/sessions" enctype=text/plain target=sink>
<input name='{{"task":"exfiltrate","x":"' value='"}}'></form>
<form id=logout method=post action="{target}/dashboard/logout" target=sink></form>
<script>
(async () => {{
  const results = {{}};
  for (const [name, url, init] of [
    ["cors-post", "{target}/v3/sessions", {{method: "POST", credentials: "include", body: '{{"task":"x"}}',
      headers: {{"Content-Type": "text/plain"}}}}],
    ["no-cors-post", "{target}/v3/sessions", {{method: "POST", mode: "no-cors", credentials: "include",
      body: '{{"task":"x"}}'}}],
    ["cors-get", "{target}/v3/sessions", {{credentials: "include"}}],
  ]) {{
    try {{ const r = await fetch(url, init); results[name] = r.type + ":" + r.status; }}
    catch (error) {{ results[name] = "blocked"; }}
  }}
  await new Promise((done) => {{
    const image = new Image();
    image.onload = image.onerror = done;
    image.src = "{target}/v3/sessions?page_size=1";
  }});
  document.getElementById("create").submit();
  await new Promise((done) => document.querySelector("iframe").addEventListener("load", done, {{once: true}}));
  document.getElementById("logout").submit();
  await new Promise((done) => document.querySelector("iframe").addEventListener("load", done, {{once: true}}));
  document.body.dataset.results = JSON.stringify(results);
  document.body.dataset.done = "1";
}})();
</script>
<a id=go href="{target}/v3/sessions">see your sessions</a>"""

    async def page(_: Request) -> HTMLResponse:
        return HTMLResponse(attempts)

    return Starlette(routes=[Route("/", page)])


async def test_log_in_use_the_dashboard_and_log_out(server: ServerProcess, context: BrowserContext) -> None:
    page = await context.new_page()
    await page.goto(server.base_url + "/run")
    assert page.url.startswith(f"{server.base_url}/dashboard/login?next=")  # a person gets the form, no prompt
    for _ in range(8):  # pages opened while signed out are no failed attempts: the throttle does not lock them out
        await page.goto(server.base_url + "/")
    await log_in(page, server, "/run", password="wrong")
    assert await page.text_content("#login-error") == "Wrong user or password."
    ARTIFACTS.mkdir(exist_ok=True)
    await page.screenshot(path=str(ARTIFACTS / "dashboard-login.png"))
    await page.fill("#login-user", "admin")
    await page.fill("#login-password", PASSWORD)
    await page.click("#login-form button[type=submit]")
    await page.wait_for_url(f"{server.base_url}/run")

    cookie = next(c for c in await context.cookies() if c["name"] == f"openbrowse_dashboard_{server.port}")
    assert cookie["httpOnly"] and cookie["sameSite"] == "Strict" and not cookie["secure"]  # plain http here
    assert PASSWORD not in cookie["value"] and API_KEY not in cookie["value"]

    # the pages' scripts use the API with the cookie: a run is created from the form, and the list shows it
    before = total_sessions(server)
    await page.fill("#task", "Open https://example.com and say what it says.")
    await page.click("#run-form button[type=submit]")
    await page.wait_for_url(f"{server.base_url}/sessions/*")
    assert total_sessions(server) == before + 1
    created = loopback.post(f"{server.v3}/sessions", json={}, headers=AUTH).json()["id"]
    await page.goto(server.base_url + "/")
    await page.locator(f"#rows tr[data-id='{created}']").wait_for(timeout=20_000)
    assert await page.locator("#logout").is_visible()

    stolen = {"Cookie": f"{cookie['name']}={cookie['value']}"}  # the cookie alone, replayed by another client
    assert loopback.get(f"{server.v3}/sessions", headers=stolen).status_code == 200  # what the cookie opened
    # changing anything takes the login's CSRF token too, which only the server's own pages carry
    csrf = await page.get_attribute("body", "data-csrf")
    assert csrf and csrf not in cookie["value"]
    for headers in (stolen, {**stolen, "X-CSRF-Token": csrf[::-1]}):
        refused = loopback.post(f"{server.v3}/sessions", json={}, headers=headers)
        assert refused.status_code == 403 and refused.json() == {"detail": CSRF_REFUSED}
    created_with_token = loopback.post(f"{server.v3}/sessions", json={}, headers={**stolen, "X-CSRF-Token": csrf})
    assert created_with_token.status_code == 200
    await page.click("#logout")
    await page.wait_for_url(f"{server.base_url}/dashboard/login")
    assert not [c for c in await context.cookies() if c["name"] == cookie["name"]]
    signed_out = loopback.get(f"{server.v3}/sessions", headers=stolen)
    assert signed_out.status_code == 401 and "www-authenticate" not in signed_out.headers  # forgotten server-side
    await page.goto(server.base_url + "/")
    assert page.url.startswith(f"{server.base_url}/dashboard/login")


async def test_a_foreign_page_on_another_port_cannot_use_the_cookie(
    server: ServerProcess, context: BrowserContext
) -> None:
    page = await context.new_page()
    await log_in(page, server)
    await page.wait_for_url(server.base_url + "/")
    await page.close()  # its polling must not be what carries the cookie below
    before = total_sessions(server)
    to_server: list[PlaywrightRequest] = []
    context.on(
        "request", lambda request: to_server.append(request) if request.url.startswith(server.base_url) else None
    )
    with ThreadedServer(attacker_site(server.base_url)) as evil:
        foreign = await context.new_page()
        await foreign.goto(evil.url + "/")
        await foreign.locator("body[data-done='1']").wait_for(timeout=30_000)
        results = await foreign.evaluate("JSON.parse(document.body.dataset.results)")
        assert results["cors-post"] == "blocked" and results["cors-get"] == "blocked"  # 403, and no CORS grant
        await foreign.click("#go")  # a plain link: a navigation carrying the cookie, without Origin
        await foreign.wait_for_url(f"{server.base_url}/v3/sessions")
        assert CROSS_SITE in (await foreign.text_content("body") or "")
    with_cookie = set()
    for request in to_server:
        if "openbrowse_dashboard" in (await request.all_headers()).get("cookie", ""):
            with_cookie.add((request.method, request.url.removeprefix(server.base_url)))
    # the browser did send the cookie (same site) on the form posts and the navigation: they were refused anyway
    assert {("POST", "/v3/sessions"), ("POST", "/dashboard/logout"), ("GET", "/v3/sessions")} <= with_cookie
    assert total_sessions(server) == before  # neither the fetches nor the form post created anything
    page = await context.new_page()
    await page.goto(server.base_url + "/")  # the forged logout did not sign this browser out
    assert page.url == server.base_url + "/" and await page.locator("#logout").is_visible()


def test_the_cookie_is_secure_over_https_and_the_forms_refuse_other_pages(server: ServerProcess) -> None:
    behind_tls = {"X-Forwarded-Proto": "https", "Origin": f"https://127.0.0.1:{server.port}"}
    form = {"username": "admin", "password": PASSWORD, "next": "//evil.example/"}
    answer = loopback.post(f"{server.base_url}/dashboard/login", data=form, headers=behind_tls)
    assert answer.status_code == 303 and answer.headers["location"] == "/"  # never off this server
    set_cookie = answer.headers["set-cookie"]
    assert "HttpOnly" in set_cookie and "SameSite=Strict" in set_cookie and "Secure" in set_cookie
    assert "Max-Age=" in set_cookie
    # bound to this origin: the __Host- prefix, which browsers accept only when Secure, host-only and Path=/
    assert set_cookie.startswith(f"__Host-openbrowse_dashboard_{server.port}=")
    assert "Path=/;" in set_cookie + ";" and "domain" not in set_cookie.lower()
    name, value = set_cookie.split(";", 1)[0].split("=", 1)
    signed_in = {"Cookie": f"{name}={value}", "X-Forwarded-Proto": "https"}
    assert loopback.get(f"{server.v3}/sessions", headers=signed_in).status_code == 200
    plain = {"Cookie": f"openbrowse_dashboard_{server.port}={value}", "X-Forwarded-Proto": "https"}
    assert loopback.get(f"{server.v3}/sessions", headers=plain).status_code == 401  # only the __Host- name counts
    for foreign in ({"Sec-Fetch-Site": "same-site"}, {"Sec-Fetch-Site": "cross-site"}):
        refused = loopback.post(f"{server.base_url}/dashboard/login", data=form, headers=foreign)
        assert refused.status_code == 403 and "set-cookie" not in refused.headers
        assert loopback.post(f"{server.base_url}/dashboard/logout", headers=foreign).status_code == 403
    assert loopback.get(f"{server.base_url}/", auth=("admin", PASSWORD)).status_code == 200  # Basic, for scripts
