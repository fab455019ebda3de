"""The dashboard in a real browser (headless Chromium driven by Playwright) against a real server with API_KEY set.

The browser signs in the way a person does: a page sends it to the login form, which takes ``DASHBOARD_USER`` /
``DASHBOARD_PASSWORD`` (a secret of its own, never the API key) and sets the login cookie; the pages' own scripts
then call the API same-origin with it. Runs use the fake provider and the fixture shop. Screenshots land in
``test-artifacts/``.
"""

from __future__ import annotations

import asyncio
import base64
import csv
import io
import json
import time
from collections.abc import AsyncIterator, Iterator

import httpx
import pytest
from PIL import Image, ImageChops
from playwright.async_api import Browser, Page, ViewportSize, async_playwright

from tests.conftest import StartServer
from tests.e2e.agent_support import agent_steps, token
from tests.e2e.browser_support import ARTIFACTS, create_browser, forwarded_for
from tests.e2e.servers import agent_env, server_fixture
from tests.fakes.llm_script import Gate, done, navigate, structured
from tests.fakes.llm_server import FakeProvider
from tests.fakes.site import FixtureSites
from tests.support import loopback
from tests.support.display import needs_display
from tests.support.server import ServerProcess

pytestmark = [pytest.mark.e2e, pytest.mark.display, needs_display]

API_KEY = "dashboard-key"
PASSWORD = "dashboard-own-password"
AUTH = {"Authorization": f"Bearer {API_KEY}"}
BASIC = {"Authorization": "Basic " + base64.b64encode(f"admin:{PASSWORD}".encode()).decode()}
CHROMIUM = "/usr/bin/chromium"
DESKTOP: ViewportSize = {"width": 1280, "height": 800}
PHONE: ViewportSize = {"width": 390, "height": 844}
XSS = '<img src=x onerror="window.__xss=1">'
PRODUCTS_SCHEMA = {
    "type": "object",
    "properties": {
        "products": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"name": {"type": "string"}, "price": {"type": "string"}},
                "required": ["name", "price"],
            },
        }
    },
    "required": ["products"],
}
PRODUCTS = {
    "products": [
        {"name": "Blue Widget", "price": "42.00"},
        {"name": "Red Gadget, large", "price": "17.50"},
        {"name": '=HYPERLINK("x")', "price": "8.25"},
    ]
}


SCRIPT_ERRORS: list[str] = []


@pytest.fixture(autouse=True)
def no_script_errors() -> Iterator[None]:
    SCRIPT_ERRORS.clear()
    yield
    assert not SCRIPT_ERRORS, SCRIPT_ERRORS


server = server_fixture(lambda fake: agent_env(fake, API_KEY=API_KEY, DASHBOARD_PASSWORD=PASSWORD), slots=3)


@pytest.fixture
async def browser() -> AsyncIterator[Browser]:
    async with async_playwright() as playwright:
        chromium = await playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=["--no-sandbox"])
        try:
            yield chromium
        finally:
            await chromium.close()


async def signed_in_page(browser: Browser, server: ServerProcess, viewport: ViewportSize) -> Page:
    context = await browser.new_context(viewport=viewport, accept_downloads=True)
    page = await context.new_page()
    page.on("pageerror", lambda error: SCRIPT_ERRORS.append(f"{page.url}: {error}"))
    await page.goto(server.base_url + "/")  # sent to the login form
    await page.fill("#login-user", "admin")
    await page.fill("#login-password", PASSWORD)
    await page.click("#login-form button[type=submit]")
    await page.wait_for_url(server.base_url + "/")
    return page


async def no_horizontal_overflow(page: Page) -> None:
    overflow = await page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
    assert overflow <= 0, f"{page.url} overflows horizontally by {overflow}px at {page.viewport_size}"


async def shoot(page: Page, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    await page.screenshot(path=str(ARTIFACTS / f"dashboard-{name}.png"), full_page=True)


def share_not_background(png: bytes) -> float:
    """The share of pixels that are not the viewer's empty background (#1e1e1e)."""
    image = Image.open(io.BytesIO(png)).convert("RGB")
    difference = ImageChops.difference(image, Image.new("RGB", image.size, (0x1E, 0x1E, 0x1E))).convert("L")
    return difference.point(lambda v: 255 if v > 12 else 0).histogram()[255] / (image.width * image.height)


async def wait_live_view_painted(page: Page) -> bytes:
    """The session's live view is connected and its noVNC canvas shows the remote page (not blank)."""
    frame = page.frame_locator("#live")
    await frame.locator("body[data-state=connected]").wait_for(timeout=30_000)
    deadline = time.monotonic() + 20
    while (share := share_not_background(png := await page.locator("#live").screenshot())) < 0.5:
        assert time.monotonic() < deadline, f"only {share:.0%} of the live view is painted"
        await asyncio.sleep(0.2)
    return png


async def wait_status(page: Page, status: str, timeout: float = 120.0) -> None:
    await page.locator(f"body[data-status={status}]").wait_for(state="attached", timeout=timeout * 1000)


# -- a run from the form ---------------------------------------------------------------------------------------
async def test_a_run_from_the_form_shows_cards_live_view_and_output(
    server: ServerProcess, browser: Browser, fake: FakeProvider, site: FixtureSites, http: httpx.Client
) -> None:
    marker = token("DASH")
    profile = http.post("/v3/profiles", json={"name": "Shop account"}).json()
    gate = Gate()
    fake.script(
        marker,
        [
            navigate(f"{site.url}/", see=f"A shop page that says {XSS}"),
            structured(done(json.dumps(PRODUCTS)), gate=gate),
        ],
        when=agent_steps,
    )
    page = await signed_in_page(browser, server, DESKTOP)
    await page.goto(f"{server.base_url}/run")
    options = await page.locator("#model option").all_inner_texts()
    assert "gpt-5.6-terra" in options and "claude-sonnet-5" in options
    await page.fill("#task", f"{marker} List the products on {site.url}/")
    await page.select_option("#model", "gpt-5.6-terra")
    await page.select_option("#effort", "low")
    await page.fill("#budget", "2")
    await page.fill("#schema", '{"type": "object",')
    assert "not valid JSON" in (await page.text_content("#schema-error") or "")
    await page.click("#run-form button[type=submit]")
    assert page.url.endswith("/run")  # refused client-side
    await page.fill("#schema", json.dumps(PRODUCTS_SCHEMA, indent=1))
    assert await page.text_content("#schema-error") == ""
    option = page.locator(f"#profile option[value='{profile['id']}']")
    await option.wait_for(state="attached")  # the form offers the server's profiles
    assert await option.inner_text() == f"Shop account ({profile['id']})"
    assert await page.is_enabled("#profile") and await page.text_content("#profile-note") == ""
    await no_horizontal_overflow(page)
    await shoot(page, "run")
    await page.click("#run-form button[type=submit]")
    await page.wait_for_url("**/sessions/*")
    session_id = page.url.rsplit("/", 1)[1]
    created = http.get(f"/v3/sessions/{session_id}").json()
    assert created["model"] == "gpt-5.6-terra" and created["reasoningEffort"] == "low"
    assert created["maxCostUsd"] == "2" and created["outputSchema"] == PRODUCTS_SCHEMA

    # cards arrive while the run is on, and the live view shows the agent's browser
    step = page.locator("#feed li[data-type=browser_action]").first
    await step.wait_for(timeout=90_000)
    assert XSS in (await step.inner_text())  # the page's markup is shown as text
    assert await page.locator("#feed img").count() == 0
    assert await page.evaluate("window.__xss") is None
    assert await page.locator("#feed li.kind-goal").count() == 1
    assert gate.wait_entered(90)
    assert await page.get_attribute("body", "data-feed-mode") == "sse"  # the page follows the event stream
    await wait_live_view_painted(page)
    await no_horizontal_overflow(page)
    await shoot(page, "session")

    # the run ends: a result card, the output as a table with downloads
    gate.open()
    await wait_status(page, "stopped")
    await page.locator("#feed li[data-type=completion]").wait_for()
    await page.click("[data-tab=output]")
    rows = page.locator("#output table tbody tr")
    await rows.nth(2).wait_for()  # the output arrives with the session's own update, which may trail the card
    assert await rows.count() == 3
    assert await page.locator("#output table thead th").all_text_contents() == ["name", "price"]
    async with page.expect_download() as json_download:
        await page.click("#download-json")
    assert json.loads((await (await json_download.value).path()).read_text()) == PRODUCTS
    async with page.expect_download() as csv_download:
        await page.click("#download-csv")
    csv_text = (await (await csv_download.value).path()).read_text()
    assert list(csv.reader(io.StringIO(csv_text))) == [
        ["name", "price"],
        ["Blue Widget", "42.00"],
        ["Red Gadget, large", "17.50"],
        ['\'=HYPERLINK("x")', "8.25"],  # defused: a spreadsheet shows it, never runs it
    ]
    assert await page.is_disabled("#stop-task") and await page.is_hidden("#follow-up")
    await shoot(page, "output")

    await page.goto(server.base_url + "/")
    row = page.locator(f"#rows tr[data-id='{session_id}']")
    assert "stopped" in await row.inner_text() and "$" in await row.locator(".col-cost").inner_text()
    await shoot(page, "sessions")
    await page.context.close()


# -- stop, follow up, phone width ------------------------------------------------------------------------------
async def test_stop_and_follow_up_at_phone_width(
    server: ServerProcess, browser: Browser, fake: FakeProvider, site: FixtureSites, http: httpx.Client
) -> None:
    page = await signed_in_page(browser, server, PHONE)
    await page.goto(server.base_url + "/")
    await no_horizontal_overflow(page)

    # a run started elsewhere appears in the open list without a reload, then gets stopped from its page
    marker = token("HALT")
    gate = Gate()
    fake.script(marker, [navigate(f"{site.url}/"), structured(done("never"), gate=gate)], when=agent_steps)
    running = http.post("/v3/sessions", json={"task": f"{marker} Look at {site.url}/ and wait."}).json()
    link = page.locator(f"#rows tr[data-id='{running['id']}'] a")
    await link.wait_for(timeout=20_000)
    await shoot(page, "sessions-phone")
    await link.click()
    assert gate.wait_entered(90)
    await wait_status(page, "running")
    await page.locator("#feed li[data-type=browser_action]").wait_for(timeout=60_000)
    await no_horizontal_overflow(page)
    await shoot(page, "session-phone")
    await page.click("#stop-task")  # stops the task: the session goes idle and takes a follow-up
    await wait_status(page, "idle", timeout=60)
    await page.locator("#feed li[data-type=completion]", has_text="Stopped by request").wait_for()
    assert await page.is_hidden("#live") and await page.is_visible("#live-empty")
    assert await page.is_visible("#follow-up") and await page.is_disabled("#stop-task")
    assert http.get(f"/v3/sessions/{running['id']}").json()["status"] == "idle"
    gate.open()

    # a keep-alive session takes a follow-up from its page
    marker = token("FOLLOW")
    fake.script(marker, [done("First answer."), done("Second answer.")], when=agent_steps)
    kept = http.post("/v3/sessions", json={"task": f"{marker} Say something.", "keepAlive": True}).json()
    deadline = time.monotonic() + 120
    while (status := http.get(f"/v3/sessions/{kept['id']}").json()["status"]) not in {"idle", "error", "stopped"}:
        assert time.monotonic() < deadline, f"keep-alive session still {status}"
        time.sleep(0.2)
    assert status == "idle"
    await page.goto(f"{server.base_url}/sessions/{kept['id']}")
    await wait_status(page, "idle")
    await page.locator("#feed li[data-type=completion]", has_text="First answer").wait_for()
    await page.locator("#follow-up").wait_for()
    await page.fill("#follow-up-task", "And once more, please.")
    await page.click("#follow-up button[type=submit]")
    await page.locator("#feed li[data-type=user_message]", has_text="And once more, please.").wait_for(timeout=30_000)
    await page.locator("#feed li[data-type=completion]").nth(1).wait_for(timeout=90_000)
    await wait_status(page, "idle")
    assert http.get(f"/v3/sessions/{kept['id']}").json()["output"] == "Second answer."
    assert await page.locator("#feed li[data-type=completion]").count() == 2
    await page.click("#stop-session")
    await wait_status(page, "stopped", timeout=60)

    for path in ("/run", "/profiles", "/browsers"):
        await page.goto(server.base_url + path)
        await page.wait_for_load_state("networkidle")
        await no_horizontal_overflow(page)
    await page.context.close()


# -- profiles and raw browsers ---------------------------------------------------------------------------------
async def test_sessions_list_profiles_and_raw_browsers_with_their_live_view(
    server: ServerProcess, browser: Browser, http: httpx.Client
) -> None:
    idle = http.post("/v3/sessions", json={}).json()
    profile = http.post("/v3/profiles", json={"name": "Listed"}).json()
    page = await signed_in_page(browser, server, DESKTOP)
    await page.goto(server.base_url + "/")
    await page.locator(f"#rows tr[data-id='{idle['id']}']").wait_for()
    await shoot(page, "sessions-list")
    await page.goto(server.base_url + "/profiles")
    await page.locator("body[data-profiles=available]").wait_for(state="attached")
    assert "Listed" in await page.locator(f"#profile-rows tr[data-id='{profile['id']}']").inner_text()
    assert await page.is_hidden("#profiles-note")
    await shoot(page, "profiles")

    raw = create_browser(http)
    await page.goto(server.base_url + "/browsers")
    item = page.locator(f"#browsers li[data-id='{raw['id']}']")
    await item.wait_for(timeout=20_000)
    await item.frame_locator("iframe").locator("body[data-state=connected]").wait_for(timeout=30_000)
    await no_horizontal_overflow(page)
    await shoot(page, "browsers")
    await item.get_by_role("button", name="Stop").click()
    await item.wait_for(state="detached", timeout=30_000)
    assert http.get(f"/v3/browsers/{raw['id']}").json()["status"] == "stopped"
    await page.context.close()


# -- authentication --------------------------------------------------------------------------------------------
def test_pages_take_basic_or_the_api_key_and_scripts_only_same_site(server: ServerProcess) -> None:
    base = server.base_url
    refused = loopback.get(base + "/", headers=forwarded_for())
    assert refused.status_code == 401 and refused.headers["www-authenticate"].startswith("Basic ")
    wrong = loopback.get(base + "/", auth=("admin", "wrong"), headers=forwarded_for())
    assert wrong.status_code == 401
    as_key = loopback.get(base + "/", auth=("admin", API_KEY), headers=forwarded_for())
    assert as_key.status_code == 401  # the API key is never the dashboard's password (spec §25.2)
    for headers in (BASIC, AUTH, {"X-Browser-Use-API-Key": API_KEY}):
        page = loopback.get(base + "/", headers=headers)
        assert page.status_code == 200 and "<h1>Sessions</h1>" in page.text
        assert "default-src 'self'" in page.headers["content-security-policy"]
    assert loopback.get(base + "/ui/static/session.js").status_code == 200

    # the dashboard's credentials work for the API from its own pages, never from another site's
    assert loopback.get(base + "/v3/sessions", headers=BASIC).status_code == 200
    same_site = {**BASIC, "Sec-Fetch-Site": "same-origin", "Origin": base}
    assert loopback.post(base + "/v3/sessions", headers=same_site, json={}).status_code == 200
    for cross_site in ({"Sec-Fetch-Site": "cross-site"}, {"Origin": "http://evil.example"}):
        answer = loopback.post(base + "/v3/sessions", headers={**BASIC, **cross_site, **forwarded_for()}, json={})
        assert answer.status_code in (401, 403), cross_site  # refused: no Basic cross-site, or the Origin guard


def test_unknown_session_page_is_a_404_page(server: ServerProcess) -> None:
    answer = loopback.get(f"{server.base_url}/sessions/{XSS}", headers=BASIC)
    assert answer.status_code == 404 and "text/html" in answer.headers["content-type"]
    assert XSS not in answer.text and "&lt;img src=x onerror=&quot;window.__xss=1&quot;&gt;" in answer.text


def test_open_on_loopback_without_a_key(start_server: StartServer) -> None:
    server = start_server()
    page = loopback.get(server.base_url + "/")
    assert page.status_code == 200 and "<h1>Sessions</h1>" in page.text
    form = loopback.get(server.base_url + "/run")
    assert form.status_code == 200 and '<option value="claude-sonnet-5">' in form.text
    assert loopback.get(server.base_url + "/ui/static/dashboard.css").headers["content-type"].startswith("text/css")
