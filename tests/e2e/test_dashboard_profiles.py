"""The profiles page (spec §4.9) in a real browser: list, import a storage state from a file, export one.

Profiles are built on another branch, so on this one ``/v3/profiles`` answers 404 and the page says profiles
are unavailable (``test_dashboard.py``). Here the real page and scripts run against a stand-in that speaks the
documented profile wire (``items`` / ``totalItems``, ``PUT`` and ``GET .../storage-state``).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.async_api import async_playwright
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from openbrowse.api.dashboard.pages import STATIC, profiles_page, run_page
from openbrowse.api.dashboard.routes import STATIC_DIR
from tests.e2e.browser_support import ARTIFACTS
from tests.support.asgi_thread import ThreadedServer

pytestmark = pytest.mark.e2e

CHROMIUM = "/usr/bin/chromium"
NOW = "2026-11-30T12:00:00.000000+00:00"
BILLING_JAR = {
    "cookies": [{"name": "sid", "value": "s1", "domain": ".billing.example", "path": "/", "expires": -1}],
    "origins": [],
}
IMPORTED_JAR = {
    "cookies": [{"name": "t", "value": "v", "domain": "shop.example", "path": "/", "expires": 1999999999}],
    "origins": [{"origin": "https://shop.example", "localStorage": [{"name": "k", "value": "<b>v</b>"}]}],
}


class ProfilesStandIn:
    def __init__(self) -> None:
        self.jars: dict[str, dict[str, Any]] = {"billing": BILLING_JAR}
        self.names: dict[str, str | None] = {"billing": "Billing <team>"}

    def profile(self, profile_id: str) -> dict[str, Any]:
        domains = sorted({c["domain"].lstrip(".") for c in self.jars[profile_id]["cookies"]})
        return {
            "id": profile_id,
            "userId": None,
            "name": self.names.get(profile_id),
            "lastUsedAt": None,
            "createdAt": NOW,
            "updatedAt": NOW,
            "cookieDomains": domains,
        }

    async def list(self, _: Request) -> JSONResponse:
        items = [self.profile(profile_id) for profile_id in self.jars]
        return JSONResponse({"items": items, "totalItems": len(items), "pageNumber": 1, "pageSize": 100})

    async def storage_state(self, request: Request) -> JSONResponse:
        profile_id = request.path_params["profile_id"]
        if request.method == "PUT":
            self.jars[profile_id] = await request.json()
            return JSONResponse(self.profile(profile_id))
        return JSONResponse(self.jars[profile_id])

    def app(self) -> Starlette:
        async def page(_: Request) -> HTMLResponse:
            return HTMLResponse(profiles_page())

        async def run(_: Request) -> HTMLResponse:
            return HTMLResponse(run_page(["gpt-5.6-terra"], ["default", "low"]))

        return Starlette(
            routes=[
                Route("/profiles", page),
                Route("/run", run),
                Route("/v3/profiles", self.list),
                Route("/v3/profiles/{profile_id}/storage-state", self.storage_state, methods=["GET", "PUT"]),
                Mount(STATIC, StaticFiles(directory=STATIC_DIR)),
            ]
        )


@pytest.fixture
def stand_in() -> Iterator[tuple[ProfilesStandIn, ThreadedServer]]:
    api = ProfilesStandIn()
    with ThreadedServer(api.app()) as served:
        yield api, served


async def test_profiles_import_and_export_storage_state(
    stand_in: tuple[ProfilesStandIn, ThreadedServer], tmp_path: Path
) -> None:
    api, served = stand_in
    jar_file = tmp_path / "state.json"
    jar_file.write_text(json.dumps(IMPORTED_JAR))
    broken_file = tmp_path / "broken.json"
    broken_file.write_text("{not json")
    errors: list[str] = []
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=["--no-sandbox"])
        try:
            page = await (await browser.new_context(accept_downloads=True)).new_page()
            page.on("pageerror", lambda error: errors.append(str(error)))
            await page.goto(f"{served.url}/profiles")
            billing = page.locator("#profile-rows tr[data-id=billing]")
            await billing.wait_for()
            assert "Billing <team>" in await billing.inner_text() and "billing.example" in await billing.inner_text()

            async with page.expect_download() as exported:
                await billing.get_by_role("button", name="Export").click()
            assert json.loads((await (await exported.value).path()).read_text()) == BILLING_JAR

            await page.fill("#import-id", "shop-profile")
            await page.set_input_files("#import-file", str(broken_file))
            await page.click("#import-form button[type=submit]")
            await page.locator("#import-result", has_text="not valid JSON").wait_for()
            assert "shop-profile" not in api.jars

            await page.set_input_files("#import-file", str(jar_file))
            await page.click("#import-form button[type=submit]")
            await page.locator("#import-result", has_text="Imported into shop-profile.").wait_for()
            assert api.jars["shop-profile"] == IMPORTED_JAR
            await page.locator("#profile-rows tr[data-id=shop-profile]", has_text="shop.example").wait_for()
            ARTIFACTS.mkdir(exist_ok=True)
            await page.screenshot(path=str(ARTIFACTS / "dashboard-profiles-available.png"), full_page=True)

            await page.goto(f"{served.url}/run")
            await page.locator("#profile option[value=shop-profile]").wait_for(state="attached")
            assert await page.is_enabled("#profile")
        finally:
            await browser.close()
    assert not errors, errors
