"""``/docs`` (spec §25.2): Swagger UI from this server's own files under a strict CSP, rendered in a real browser
with every request that would leave the server's origin refused and recorded; off where it should be."""

from __future__ import annotations

import pytest
from playwright.async_api import ConsoleMessage, Request, Route, async_playwright

from tests.conftest import StartServer
from tests.support import loopback

pytestmark = pytest.mark.e2e

CHROMIUM = "/usr/bin/chromium"


def record_error(message: ConsoleMessage, problems: list[str]) -> None:
    if message.type == "error":
        problems.append(message.text)


async def test_docs_render_offline_from_local_files_under_a_csp(start_server: StartServer) -> None:
    server = start_server()
    answer = loopback.get(f"{server.base_url}/docs")
    assert answer.status_code == 200
    policy = answer.headers["content-security-policy"]
    assert "script-src 'self'" in policy and "default-src 'none'" in policy and "unsafe-eval" not in policy
    assert "cdn" not in answer.text and "<script>" not in answer.text  # no inline script, nothing from elsewhere
    assert loopback.get(f"{server.base_url}/redoc").status_code == 404  # FastAPI's CDN page is not served either

    left_the_origin: list[str] = []
    problems: list[str] = []

    async def only_this_origin(route: Route, request: Request) -> None:
        if request.url.startswith(server.base_url + "/"):
            await route.continue_()
        else:
            left_the_origin.append(request.url)
            await route.abort()

    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=["--no-sandbox"])
        try:
            page = await browser.new_page()
            page.on("console", lambda message: record_error(message, problems))
            page.on("pageerror", lambda error: problems.append(str(error)))
            await page.route("**/*", only_this_origin)
            await page.goto(f"{server.base_url}/docs")
            await page.locator(".swagger-ui .info .title").filter(has_text="OpenBrowse").wait_for(timeout=30_000)
            operation = page.locator(".opblock-summary-path", has_text="/v3/sessions").first
            await operation.wait_for(timeout=30_000)
            await operation.click()  # the operation opens: the UI works, not just paints
            await page.locator(".opblock-body").first.wait_for(timeout=10_000)
        finally:
            await browser.close()
    assert left_the_origin == []
    assert problems == []  # a CSP violation shows as a console error


def test_docs_are_off_when_disabled_and_by_default_beyond_loopback(start_server: StartServer) -> None:
    for server in (
        start_server(DOCS_ENABLED="0"),
        start_server(HOST="0.0.0.0", API_KEY="docs-key", DASHBOARD_PASSWORD="docs-dashboard-pw"),
    ):
        assert loopback.get(f"{server.base_url}/docs").status_code == 404
        assert loopback.get(f"{server.base_url}/docs/assets/swagger-ui-bundle.js").status_code == 404
        assert loopback.get(f"{server.base_url}/openapi.json").status_code == 200  # the document itself stays
