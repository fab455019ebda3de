"""The profiles page (spec §4.9) in a real browser against a real server: list, export, import, create.

The server runs open on loopback (no API key), so the page's own scripts call the real ``/v3/profiles`` routes;
every check of what the page did is made through the API, as a client would see it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.async_api import async_playwright

from tests.conftest import StartServer
from tests.e2e.browser_support import ARTIFACTS

pytestmark = pytest.mark.e2e

CHROMIUM = "/usr/bin/chromium"
BILLING_JAR = {
    "cookies": [{"name": "sid", "value": "s1", "domain": ".billing.example", "path": "/", "expires": -1}],
    "origins": [],
}
IMPORTED_JAR = {
    "cookies": [{"name": "t", "value": "v", "domain": "shop.example", "path": "/", "expires": 1999999999}],
    "origins": [{"origin": "https://shop.example", "localStorage": [{"name": "k", "value": "<b>v</b>"}]}],
}


def cookie_names(jar: dict[str, Any]) -> set[tuple[str, str]]:
    return {(cookie["name"], cookie["domain"]) for cookie in jar["cookies"]}


async def test_profiles_import_export_and_create_through_the_page(start_server: StartServer, tmp_path: Path) -> None:
    server = start_server()
    api = httpx.Client(base_url=server.v3, timeout=30)
    assert api.put("/profiles/billing/storage-state", json=BILLING_JAR).status_code == 200
    assert api.patch("/profiles/billing", json={"name": "Billing <team>"}).status_code == 200
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
            await page.goto(f"{server.base_url}/profiles")
            await page.locator("body[data-profiles=available]").wait_for(state="attached")
            billing = page.locator("#profile-rows tr[data-id=billing]")
            await billing.wait_for()
            assert "Billing <team>" in await billing.inner_text() and "billing.example" in await billing.inner_text()

            async with page.expect_download() as exported:
                await billing.get_by_role("button", name="Export").click()
            downloaded = json.loads((await (await exported.value).path()).read_text())
            assert downloaded == api.get("/profiles/billing/storage-state").json()
            assert cookie_names(downloaded) == {("sid", ".billing.example")}

            await page.fill("#import-id", "shop-profile")
            await page.set_input_files("#import-file", str(broken_file))
            await page.click("#import-form button[type=submit]")
            await page.locator("#import-result", has_text="not valid JSON").wait_for()
            assert api.get("/profiles/shop-profile").status_code == 404  # refused before it reached the server

            await page.set_input_files("#import-file", str(jar_file))
            await page.click("#import-form button[type=submit]")
            await page.locator("#import-result", has_text="Imported into shop-profile.").wait_for()
            stored = api.get("/profiles/shop-profile/storage-state").json()
            assert cookie_names(stored) == {("t", "shop.example")}
            assert stored["origins"][0]["localStorage"] == [{"name": "k", "value": "<b>v</b>"}]
            await page.locator("#profile-rows tr[data-id=shop-profile]", has_text="shop.example").wait_for()

            await page.fill("#create-name", "Empty one")
            await page.click("#create-form button[type=submit]")
            await page.locator("#create-result", has_text="Created ").wait_for()
            created = next(
                p for p in api.get("/profiles", params={"page_size": 100}).json()["items"] if p["name"] == "Empty one"
            )
            await page.locator(f"#profile-rows tr[data-id='{created['id']}']").wait_for()
            ARTIFACTS.mkdir(exist_ok=True)
            await page.screenshot(path=str(ARTIFACTS / "dashboard-profiles-available.png"), full_page=True)

            await page.goto(f"{server.base_url}/run")
            for profile_id in ("billing", "shop-profile", created["id"]):
                await page.locator(f"#profile option[value='{profile_id}']").wait_for(state="attached")
            assert await page.is_enabled("#profile")
        finally:
            await browser.close()
            api.close()
    assert not errors, errors
