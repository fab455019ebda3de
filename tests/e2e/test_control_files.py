"""Files the control API makes land in the target's file area (spec §20.2, §22.2, §22.3), on a real server.

A screenshot (and a PDF, a trace) of a raw browser or a parked session is written into the target's
``screenshots/`` (``traces/``), answered with the one files route ``/v3/{browsers|sessions}/{id}/files/…``, listed by
that area's listing and fetched like any other file: with the API key, or signed for a caller who asked for URLs or
holds only the browser's own token. The status route answers with or without a trailing slash, never a redirect.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest

from tests.e2e.agent_support import agent_steps, settled_with, token
from tests.e2e.control_routes_site import ok
from tests.e2e.servers import SHARED_API_KEY, agent_env, server_fixture
from tests.fakes.llm_script import done, navigate
from tests.fakes.llm_server import FakeProvider
from tests.fakes.site import FixtureSites
from tests.support import loopback
from tests.support.display import needs_display
from tests.support.server import ServerProcess

pytestmark = [pytest.mark.e2e, pytest.mark.display, needs_display]

API_KEY = SHARED_API_KEY
PNG = b"\x89PNG\r\n\x1a\n"


# one server for the control, files and MCP-session modules of this test process (tests/e2e/servers.py)
server = server_fixture(lambda fake: agent_env(fake, API_KEY=API_KEY), slots=2, shared=True)


def listed(http: httpx.Client, owner: str, area: str, **params: Any) -> dict[str, str | None]:
    """The names of one area's listing, each with its URL (None unless asked for)."""
    page = ok(http.get(f"/v3/{owner}/files/{area}", params=params))
    return {entry["path"]: entry.get("url") for entry in page["files"]}


def test_a_raw_browsers_screenshot_is_a_file_of_its_screenshots_area(
    server: ServerProcess, http: httpx.Client, browser: dict[str, Any], site: FixtureSites
) -> None:
    owner, base = f"browsers/{browser['id']}", f"/v3/browsers/{browser['id']}/browser"
    ok(http.post(f"{base}/navigate", json={"url": f"{site.url}/colour"}))

    shot = ok(http.post(f"{base}/screenshot", json={"type": "png"}))
    path = Path(shot["path"])
    assert path.parent == server.home / "data" / "browsers" / browser["id"] / "screenshots", path
    assert shot["url"] == f"/v3/{owner}/files/screenshots/{path.name}"
    assert http.get(shot["url"]).content.startswith(PNG)
    assert path.name in listed(http, owner, "screenshots")
    signed = listed(http, owner, "screenshots", includeUrls="true")[path.name]
    assert signed is not None and loopback.get(signed, timeout=30).content.startswith(PNG)  # no key needed
    assert http.get(f"{base}/files/{path.name}").status_code == 404  # one files route: not a second one under {B}

    asked = ok(http.post(f"{base}/screenshot", json={"type": "jpeg", "includeUrls": True}))
    assert urlsplit(asked["url"]).path == f"/v3/{owner}/files/screenshots/{Path(asked['path']).name}"
    assert "sig=" in asked["url"] and loopback.get(asked["url"], timeout=30).content.startswith(b"\xff\xd8\xff")

    ok(http.post(f"{base}/trace/start", json={}))
    trace = ok(http.post(f"{base}/trace/stop", json={}))
    assert Path(trace["path"]).parent.name == "traces"
    assert trace["url"] == f"/v3/{owner}/files/traces/{Path(trace['path']).name}"
    assert http.get(trace["url"]).content.startswith(b"PK")
    assert Path(trace["path"]).name in listed(http, owner, "traces")

    printed = http.post(f"{base}/pdf", json={})
    if printed.status_code != 501:  # a headed Chromium may refuse to print (spec §20.2)
        pdf = ok(printed)
        assert Path(pdf["path"]).parent.name == "screenshots"
        assert http.get(pdf["url"]).content.startswith(b"%PDF")


def test_the_browsers_own_token_gets_a_signed_url_it_can_fetch(server: ServerProcess, browser: dict[str, Any]) -> None:
    base = f"{server.v3}/browsers/{browser['id']}/browser"
    cdp_token = browser["cdpUrl"].split("token=")[1]
    shot = loopback.post(f"{base}/screenshot", params={"token": cdp_token}, json={}, timeout=60)
    assert shot.status_code == 200, shot.text
    url = shot.json()["url"]
    assert "sig=" in url and loopback.get(url, timeout=30).content.startswith(PNG)
    assert loopback.get(url.split("?")[0], timeout=30).status_code == 401  # unsigned, it takes the API key


def test_the_status_route_answers_with_or_without_a_trailing_slash(http: httpx.Client, browser: dict[str, Any]) -> None:
    base = f"/v3/browsers/{browser['id']}/browser"
    bare, slashed = http.get(base), http.get(f"{base}/", follow_redirects=False)
    assert bare.status_code == 200 and slashed.status_code == 200, slashed.headers
    assert ok(slashed)["running"] is True and ok(slashed).keys() == ok(bare).keys()


def test_a_parked_sessions_screenshot_is_a_file_of_the_sessions_area(
    server: ServerProcess, fake: FakeProvider, site: FixtureSites, http: httpx.Client
) -> None:
    marker = token("CTLFILES")
    fake.script(marker, [navigate(f"{site.url}/colour"), done("The colour page is open.")], when=agent_steps)
    created = http.post("/v3/sessions", json={"task": f"{marker} Open {site.url}/colour", "keepAlive": True})
    sid = created.json()["id"]
    try:
        assert settled_with(http, sid)["status"] == "idle"
        shot = ok(http.post(f"/v3/sessions/{sid}/browser/screenshot", json={}))
        path = Path(shot["path"])
        assert path.parent == server.home / "data" / "sessions" / sid / "screenshots", path
        assert shot["url"] == f"/v3/sessions/{sid}/files/screenshots/{path.name}"
        assert http.get(shot["url"]).content.startswith(PNG)
        assert path.name in listed(http, f"sessions/{sid}", "screenshots")
        slashed = http.get(f"/v3/sessions/{sid}/browser/", follow_redirects=False)
        assert slashed.status_code == 200 and ok(slashed)["running"] is True
    finally:
        http.post(f"/v3/sessions/{sid}/stop", json={"strategy": "session"})
