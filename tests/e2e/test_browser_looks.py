"""How the browser looks to sites (spec §28.2), measured by a page: BotD and the probe of ``tests/fakes/looks_site``.

One server for the module, with a language and a time zone that differ from the defaults (so the test proves the
settings reach the browser, not that the machine happens to agree). The same page is opened by an agent session
(browser-use, driven by the fake provider) and by Playwright over a raw browser's ``cdpUrl``; each page reports
what it saw to the fixture site, and the tests assert on that report.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from playwright.async_api import async_playwright

from tests.e2e.agent_support import agent_steps, create, wait_until_status
from tests.e2e.browser_support import create_browser, needs_display, stop_browser
from tests.e2e.servers import agent_env, server_fixture
from tests.fakes.llm_script import Gate, done, navigate, structured
from tests.fakes.llm_server import FakeProvider
from tests.fakes.looks_site import BOTD_PACKAGE_DIR, BOTD_SCRIPT, LooksSite
from tests.support.npm_clients import NpmClients
from tests.support.server import ServerProcess

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.display,
    needs_display,
    pytest.mark.timeout(300),
]  # a cold npm install of BotD and Node

LOCALE = "de-DE"
TIME_ZONE = "Europe/Berlin"
BOTD = NpmClients("botd", BOTD_PACKAGE_DIR, (BOTD_SCRIPT,))

server = server_fixture(lambda fake: agent_env(fake, BROWSER_LOCALE=LOCALE, BROWSER_TIMEZONE=TIME_ZONE))


@pytest.fixture(scope="module")
def looks() -> Iterator[LooksSite]:
    with LooksSite(BOTD.ensure()) as site:
        yield site


def assert_looks_like_desktop_chrome(seen: dict[str, Any]) -> None:
    assert seen["botd"] == {"bot": False}, seen
    assert seen["webdriver"] is False
    assert "Chrome/" in seen["userAgent"] and "Headless" not in seen["userAgent"] + seen["appVersion"]
    assert seen["brands"] and not any("Headless" in brand for brand in seen["brands"])
    assert len(seen["plugins"]) == 5 and "application/pdf" in seen["mimeTypes"] and seen["pdfViewerEnabled"]
    assert seen["chrome"] is not None and "loadTimes" in seen["chrome"]
    assert (seen["notification"], seen["notificationQuery"]) == ("default", "prompt")
    assert seen["webgl"] is True and seen["webglRenderer"]
    assert seen["automationGlobals"] == [] and seen["outer"][0] > 0 and seen["outer"][1] > 0  # a real window
    # one language and one time zone, wherever a page looks
    assert seen["languages"] == [LOCALE, "de"] and seen["language"] == LOCALE
    assert seen["acceptLanguage"].split(",")[0] == LOCALE and "de;q=" in seen["acceptLanguage"]
    assert seen["timeZone"] == TIME_ZONE and seen["timezoneOffset"] == -60  # CET in January
    # Intl's default locale is the application locale, en-US unless Debian's chromium-l10n is installed
    assert seen["intlLocale"] in {LOCALE, "en-US"}


async def test_a_raw_browser_driven_by_playwright_looks_like_desktop_chrome(
    server: ServerProcess, looks: LooksSite
) -> None:
    run = f"raw-{uuid.uuid4().hex[:8]}"
    with httpx.Client(base_url=server.base_url, timeout=60) as http:
        created = create_browser(http)
        try:
            async with async_playwright() as playwright:
                remote = await playwright.chromium.connect_over_cdp(created["cdpUrl"])
                page = remote.contexts[0].pages[0]
                await page.goto(looks.url_for(run))
                seen = looks.report(run)
                assert await page.title() == "Browser looks: reported"  # Playwright still drives the page
                await remote.close()
        finally:
            stop_browser(http, created["id"])
    assert_looks_like_desktop_chrome(seen)


def test_an_agent_sessions_browser_looks_like_desktop_chrome(
    server: ServerProcess, fake: FakeProvider, looks: LooksSite
) -> None:
    run = f"agent-{uuid.uuid4().hex[:8]}"
    gate = Gate()
    fake.script(run, [navigate(looks.url_for(run)), structured(done("Looked."), gate=gate)], when=agent_steps)
    session = create(server, task=f"{run} Open {looks.url_for(run)} and say what you see.")
    seen = looks.report(run)
    gate.open()
    assert wait_until_status(server, session["id"], {"stopped", "idle"})["isTaskSuccessful"] is True
    assert_looks_like_desktop_chrome(seen)
