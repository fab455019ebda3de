"""A person's takeover from the dashboard (spec §21.5, §19.4): Pause, Take over and Hand back on a session page and
on the raw browsers page, and why things ended, in a real browser against a real server.

The dashboard is driven by headless Chromium (Playwright) signed in with the login form, as a person would be; the
API is read with the key to see what the clicks did. The session's agent is the fake provider, held mid-step by a
gate so the session is running when Pause is clicked. Take over opens the takeover link in a new tab: the viewer
connects with input enabled. The maintenance banner is covered by ``test_maintenance.py``.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from playwright.async_api import Browser, Page, ViewportSize, async_playwright

from tests.e2e.agent_support import agent_steps, settled_with, token
from tests.e2e.browser_support import ARTIFACTS, create_browser
from tests.e2e.servers import agent_env, server_fixture
from tests.fakes.llm_script import Gate, done, structured
from tests.fakes.llm_server import FakeProvider
from tests.support.display import needs_display
from tests.support.server import ServerProcess, wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.display, needs_display]

API_KEY = "dashboard-takeover-key"
PASSWORD = "dashboard-takeover-password"
CHROMIUM = "/usr/bin/chromium"
VIEWPORT: ViewportSize = {"width": 1280, "height": 900}
WAIT_MS = 30_000


server = server_fixture(
    lambda fake: agent_env(fake, API_KEY=API_KEY, DASHBOARD_PASSWORD=PASSWORD, PAUSE_TIMEOUT="600"), slots=2
)


@pytest.fixture
async def page(server: ServerProcess) -> AsyncIterator[Page]:
    """A dashboard page signed in with the login form; any script error on it fails the test."""
    errors: list[str] = []
    async with async_playwright() as playwright:
        chromium: Browser = await playwright.chromium.launch(
            executable_path=CHROMIUM, headless=True, args=["--no-sandbox"]
        )
        try:
            context = await chromium.new_context(viewport=VIEWPORT)
            context.on("page", lambda opened: opened.on("pageerror", lambda error: errors.append(str(error))))
            signed_in = await context.new_page()
            await signed_in.goto(server.base_url + "/")  # sent to the login form
            await signed_in.fill("#login-user", "admin")
            await signed_in.fill("#login-password", PASSWORD)
            await signed_in.click("#login-form button[type=submit]")
            await signed_in.wait_for_url(server.base_url + "/")
            yield signed_in
        finally:
            await chromium.close()
    assert not errors, errors


def api_pause(http: httpx.Client, path: str) -> dict[str, Any] | None:
    pause: dict[str, Any] | None = http.get(path).json()["pause"]
    return pause


async def wait_for_api(http: httpx.Client, path: str, check: Any, what: str) -> dict[str, Any]:
    def read() -> dict[str, Any]:
        record: dict[str, Any] = http.get(path).json()
        return record

    await asyncio.to_thread(wait_until, lambda: check(read()), 30, what=what)
    return read()


async def take_over(page: Page, link: Any, takeover_url: str, server: ServerProcess) -> None:
    """Click Take over: the takeover link opens in a new tab and its viewer connects with input enabled."""
    assert await link.get_attribute("href") == takeover_url
    async with page.context.expect_page() as opened:
        await link.click()
    viewer = await opened.value
    await viewer.locator("body[data-state=connected][data-takeover=active]").wait_for(timeout=WAIT_MS)
    assert viewer.url == server.base_url + takeover_url
    await viewer.close()


# -- a session page --------------------------------------------------------------------------------------------
async def test_pause_take_over_and_hand_back_a_running_session_then_its_end_reason(
    server: ServerProcess, http: httpx.Client, fake: FakeProvider, page: Page
) -> None:
    marker = token("DASHPAUSE")
    gate = Gate()
    fake.script(
        marker,
        [structured(done("never sent: the pause cancels this call"), gate=gate), done("Finished after the hand back.")],
        when=agent_steps,
    )
    sid = http.post("/v3/sessions", json={"task": f"{marker} Say something."}).json()["id"]
    path = f"/v3/sessions/{sid}"
    try:
        assert await asyncio.to_thread(gate.wait_entered, 90), "the agent's step never reached the model"
        await page.goto(f"{server.base_url}/sessions/{sid}")
        await page.locator("body[data-status=running]").wait_for(timeout=WAIT_MS)
        assert await page.locator("#hand-back").is_hidden() and await page.locator("#take-over").is_hidden()

        await page.get_by_role("button", name="Pause").click()
        paused = await wait_for_api(http, path, lambda s: (s["pause"] or {}).get("state") == "paused", "the pause")
        assert paused["status"] == "running" and paused["pause"]["by"] == "user"
        await page.locator("body[data-pause=paused]").wait_for(timeout=WAIT_MS)
        assert await page.locator("#pause").is_hidden()
        assert "Paused for a person" in (await page.text_content("#pause-state") or "")
        ARTIFACTS.mkdir(exist_ok=True)
        await page.screenshot(path=str(ARTIFACTS / "dashboard-session-paused.png"))

        await take_over(page, page.locator("#take-over"), paused["takeoverUrl"], server)

        await page.get_by_role("button", name="Hand back").click()
        await wait_for_api(http, path, lambda s: s["pause"] is None, "the hand back")
        await page.locator("body[data-pause='']").wait_for(state="attached", timeout=WAIT_MS)
    finally:
        gate.open()
    finished = await asyncio.to_thread(settled_with, http, sid)
    assert finished["status"] == "stopped" and finished["output"] == "Finished after the hand back."

    end_reason = finished["endReason"]
    assert end_reason, finished
    await page.locator(f"body[data-end-reason='{end_reason}']").wait_for(state="attached", timeout=WAIT_MS)
    assert await page.text_content("#end-reason") == f"ended: {end_reason}"
    assert await page.locator("#pause").is_hidden() and await page.locator("#hand-back").is_hidden()
    await page.reload()  # the server-rendered page says it too, before any script runs
    assert await page.text_content("#end-reason") == f"ended: {end_reason}"
    await page.screenshot(path=str(ARTIFACTS / "dashboard-session-ended.png"))


# -- the raw browsers page -------------------------------------------------------------------------------------
async def test_pause_take_over_and_hand_back_a_raw_browser_then_its_state_and_end_reason(
    server: ServerProcess, http: httpx.Client, page: Page
) -> None:
    raw = create_browser(http)
    path = f"/v3/browsers/{raw['id']}"
    await page.goto(f"{server.base_url}/browsers")
    item = page.locator(f"#browsers li[data-id='{raw['id']}']")
    await item.locator("xpath=self::*[@data-state='live']").wait_for(timeout=WAIT_MS)
    assert await item.get_by_role("link", name="Take over").is_hidden()

    await item.get_by_role("button", name="Pause").click()
    paused = await wait_for_api(http, path, lambda b: b["state"] == "paused", "the browser's pause")
    assert paused["pause"]["state"] == "paused" and paused["takeoverUrl"]
    await item.locator("xpath=self::*[@data-state='paused'][@data-pause='paused']").wait_for(timeout=WAIT_MS)
    assert await item.get_by_role("button", name="Pause").is_hidden()
    ARTIFACTS.mkdir(exist_ok=True)
    await page.screenshot(path=str(ARTIFACTS / "dashboard-browser-paused.png"), full_page=True)

    await take_over(page, item.get_by_role("link", name="Take over"), paused["takeoverUrl"], server)

    await item.get_by_role("button", name="Hand back").click()
    resumed = await wait_for_api(http, path, lambda b: b["state"] == "live", "the browser's hand back")
    assert resumed["pause"] is None and resumed["takeoverUrl"] is None
    await item.locator("xpath=self::*[@data-state='live'][@data-pause='']").wait_for(timeout=WAIT_MS)

    await item.get_by_role("button", name="Stop").click()
    await item.wait_for(state="detached", timeout=WAIT_MS)
    stopped = http.get(path).json()
    assert stopped["status"] == "stopped" and stopped["state"] == "ended" and stopped["endReason"] == "closed"
    ended = page.locator(f"#ended-browsers li[data-id='{raw['id']}']")
    await ended.wait_for(timeout=WAIT_MS)
    assert await ended.get_attribute("data-state") == "ended"
    assert "ended: closed" in (await ended.text_content() or "")
    await page.screenshot(path=str(ARTIFACTS / "dashboard-browsers-ended.png"), full_page=True)
