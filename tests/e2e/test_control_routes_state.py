"""Every route of the browser control API (spec §20.2) through a real server and its sandboxed slot, part 2: files
in and out of the page (file chooser from the slot's ``uploads/``, downloads into its ``downloads/``), cookies, web
storage, the ``/set/*`` overrides, permissions, highlight and traces. Part 1 is ``test_control_routes.py``.

What is asserted is what a user sees: what the fixture site received (the uploaded file's content, the cookies and
headers of a request, basic-auth credentials), what the page reports (``navigator.onLine``, the timezone, …), and
files on disk and over HTTP.
"""

from __future__ import annotations

import io
import threading
import time
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.e2e.browser_support import create_browser, stop_browser
from tests.e2e.control_routes_site import (
    BASIC_PASSWORD,
    BASIC_USER,
    REPORT,
    SLOW_REPORT,
    Browser,
    ControlSite,
    ok,
    ref_of,
    refused,
)
from tests.e2e.servers import SHARED_API_KEY, api_client, server_fixture
from tests.support.display import needs_display
from tests.support.server import ServerProcess, wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.display, needs_display]

API_KEY = SHARED_API_KEY
AUTH = {"Authorization": f"Bearer {API_KEY}"}


@pytest.fixture(scope="module")
def site() -> Iterator[ControlSite]:
    with ControlSite() as served:
        yield served


# one server for the raw-browser modules that need no fresh one, in this test process (tests/e2e/servers.py)
server = server_fixture({"API_KEY": API_KEY}, shared=True)


@pytest.fixture(scope="module")
def http(server: ServerProcess) -> Iterator[httpx.Client]:
    with api_client(server) as client:
        yield client


@pytest.fixture(scope="module")
def b(http: httpx.Client) -> Iterator[Browser]:
    created = create_browser(http)
    yield Browser(http, created["id"])
    stop_browser(http, created["id"])


@pytest.fixture(scope="module")
def slot(server: ServerProcess, b: Browser) -> Path:
    """The one slot's folder on disk (the server has one slot, so the module's browser is in it)."""
    folder = server.home / "data" / "run" / "slots" / f"slot-{server.slot_base}"
    assert (folder / "uploads").is_dir() and (folder / "downloads").is_dir()
    return folder


def test_a_file_from_the_slots_uploads_folder_reaches_the_site_and_nothing_outside_it_does(
    server: ServerProcess, b: Browser, site: ControlSite, slot: Path
) -> None:
    (slot / "uploads" / "cv.txt").write_text("my own cv")
    (slot / "uploads" / "cover.txt").write_text("my cover letter")
    b.goto(f"{site.url}/upload")
    snap = b.snapshot(interactive="true")
    file_input = next(ref for ref, node in snap["refs"].items() if node.get("name") == "Attachment")

    ok(b.post("/hooks/file-chooser", {"paths": ["cv.txt"], "inputRef": file_input}))
    wait_until(lambda: ("cv.txt", "my own cv") in site.log.uploads, 10, what="the page sending cv.txt")
    chooser = ref_of(snap, "button", "Choose a file")
    ok(b.post("/hooks/file-chooser", {"paths": [str(slot / "uploads" / "cover.txt")], "ref": chooser}))
    wait_until(lambda: ("cover.txt", "my cover letter") in site.log.uploads, 10, what="the page sending cover.txt")

    secret = server.home / "outside.txt"
    secret.write_text("not for the page")
    for outside in (str(secret), "../../outside.txt", "/etc/hostname"):
        refused(b.post("/hooks/file-chooser", {"paths": [outside], "inputRef": file_input}), 403, "PATH_FORBIDDEN")
    (slot / "uploads" / "link.txt").symlink_to(secret)
    refused(b.post("/hooks/file-chooser", {"paths": ["link.txt"], "inputRef": file_input}), 403, "PATH_FORBIDDEN")
    assert all("not for the page" not in content for _, content in site.log.uploads)


def test_downloads_land_in_the_slots_downloads_folder_and_are_served_byte_for_byte(
    b: Browser, site: ControlSite, slot: Path
) -> None:
    b.goto(f"{site.url}/files")
    snap = b.snapshot(interactive="true")
    link = ref_of(snap, "link", "Get the report")
    saved = ok(b.post("/download", {"ref": link, "path": "q3.csv"}))
    assert saved["suggestedFilename"] == "report.csv" and saved["size"] == len(REPORT)
    assert Path(saved["path"]) == slot / "downloads" / "q3.csv"
    assert (slot / "downloads" / "q3.csv").read_bytes() == REPORT
    assert b.fetch(saved["url"]) == REPORT
    refused(b.post("/download", {"ref": link, "path": "/tmp/elsewhere.csv"}), 403, "PATH_FORBIDDEN")
    refused(b.post("/download", {"ref": link, "path": "../escape.csv"}), 403, "PATH_FORBIDDEN")

    # wait/download: the site holds the slow report until the wait is in flight, then the download finishes
    b.act(kind="click", ref=ref_of(snap, "link", "Get the slow report"))
    assert site.log.slow_requested.wait(10), "the browser never asked for the slow report"
    waited: dict[str, httpx.Response] = {}
    sent = threading.Event()
    with httpx.Client(
        base_url=b.http.base_url, headers=AUTH, timeout=60, event_hooks={"request": [lambda _: sent.set()]}
    ) as other:
        worker = threading.Thread(
            target=lambda: waited.update(r=other.post(f"{b.base}/wait/download", json={"path": "slow.csv"}))
        )
        worker.start()
        assert sent.wait(10)
        # No outside signal says the server has subscribed to download events; the request is out, give it a
        # moment to arrive before the site answers (a miss would show as a 422 "No download started").
        time.sleep(1.0)
        site.log.slow_release.set()
        worker.join(60)
    slow = ok(waited["r"])
    assert Path(slow["path"]) == slot / "downloads" / "slow.csv" and slow["size"] == len(SLOW_REPORT)
    assert b.fetch(slow["url"]) == SLOW_REPORT == (slot / "downloads" / "slow.csv").read_bytes()
    refused(b.post("/wait/download", {"path": "/etc/passwd", "timeoutMs": 500}), 403, "PATH_FORBIDDEN")


def test_cookies_set_through_the_api_are_sent_to_the_site_and_cleared_ones_are_not(
    b: Browser, site: ControlSite
) -> None:
    ok(b.post("/cookies/clear"))
    b.goto(f"{site.url}/blank")
    added = ok(b.post("/cookies/set", {"cookie": {"name": "flavour", "value": "oat", "url": site.url}}))
    assert added["added"] == 1
    many = [
        {"name": "size", "value": "large", "url": site.url},
        {"name": "colour", "value": "blue", "domain": "127.0.0.1", "path": "/"},
    ]
    assert ok(b.post("/cookies/set-many", {"cookies": many}))["added"] == 2
    listed = {cookie["name"]: cookie["value"] for cookie in ok(b.get("/cookies"))["cookies"]}
    assert listed == {"flavour": "oat", "size": "large", "colour": "blue"}
    b.goto(f"{site.url}/echo")
    assert site.log.echoes[-1]["cookies"] == {"flavour": "oat", "size": "large", "colour": "blue"}

    ok(b.post("/cookies/clear", {"name": "size"}))
    b.goto(f"{site.url}/echo")
    assert site.log.echoes[-1]["cookies"] == {"flavour": "oat", "colour": "blue"}
    ok(b.post("/cookies/clear"))
    assert ok(b.get("/cookies"))["cookies"] == []
    b.goto(f"{site.url}/echo")
    assert site.log.echoes[-1]["cookies"] == {}


@pytest.mark.parametrize("kind", ["local", "session"])
def test_web_storage_set_through_the_api_is_what_the_page_reads(b: Browser, site: ControlSite, kind: str) -> None:
    b.goto(f"{site.url}/blank")
    stored = ok(b.post(f"/storage/{kind}/set", {"key": "theme", "value": "dark"}))
    assert stored["origin"] == site.url and stored["items"]["theme"] == "dark"
    ok(b.post(f"/storage/{kind}/set", {"key": "lang", "value": "en"}))
    assert b.evaluate(f"{kind}Storage.getItem('theme')") == "dark"
    b.evaluate(f"{kind}Storage.setItem('fromPage', 'yes')")
    assert ok(b.get(f"/storage/{kind}"))["items"] == {"theme": "dark", "lang": "en", "fromPage": "yes"}
    assert ok(b.get(f"/storage/{kind}", key="lang"))["items"] == {"lang": "en"}
    ok(b.post(f"/storage/{kind}/clear", {"key": "lang"}))
    assert b.evaluate(f"{kind}Storage.getItem('lang')") is None
    ok(b.post(f"/storage/{kind}/clear"))
    assert ok(b.get(f"/storage/{kind}"))["items"] == {} and b.evaluate(f"{kind}Storage.length") == 0


def test_each_set_override_is_what_the_page_and_the_site_see_until_cleared(b: Browser, site: ControlSite) -> None:
    b.goto(f"{site.url}/blank")

    def overrides(setting: str, body: dict[str, Any]) -> dict[str, Any]:
        shown: dict[str, Any] = ok(b.post(f"/set/{setting}", body))["overrides"]
        return shown

    reach = "fetch('/api/ping').then(() => 'reached', () => 'failed')"
    assert overrides("offline", {"offline": True})["offline"] == {"offline": True}
    assert b.evaluate(reach) == "failed" and b.evaluate("navigator.onLine") is False
    assert "offline" not in overrides("offline", {"clear": True})
    assert b.evaluate(reach) == "reached"

    assert overrides("headers", {"headers": {"X-Fixture": "hello"}})["headers"] == {"headers": {"X-Fixture": "hello"}}
    b.goto(f"{site.url}/echo")
    assert site.log.echoes[-1]["headers"]["x-fixture"] == "hello"
    assert "headers" not in overrides("headers", {"clear": True})
    b.goto(f"{site.url}/echo")
    assert "x-fixture" not in site.log.echoes[-1]["headers"]

    shown = overrides("credentials", {"username": BASIC_USER, "password": BASIC_PASSWORD})
    assert shown["credentials"] == {"username": BASIC_USER, "password": "[redacted]"}
    b.goto(f"{site.url}/private")
    assert "Welcome, member" in b.snapshot()["snapshot"]
    overrides("credentials", {"clear": True})

    b.goto(f"{site.url}/blank")
    overrides("media", {"colorScheme": "dark"})
    assert b.evaluate("matchMedia('(prefers-color-scheme: dark)').matches") is True
    overrides("timezone", {"timezoneId": "Asia/Tokyo"})
    assert b.evaluate("Intl.DateTimeFormat().resolvedOptions().timeZone") == "Asia/Tokyo"
    overrides("locale", {"locale": "de-DE"})
    assert b.evaluate("navigator.language") == "de-DE"
    b.goto(f"{site.url}/echo")
    assert site.log.echoes[-1]["headers"]["accept-language"].startswith("de-DE")
    assert b.evaluate("new Intl.NumberFormat().format(1234.5)") == "1.234,5"

    granted = ok(b.post("/permissions/grant", {"permissions": ["geolocation"]}))
    assert granted["origin"] == site.url
    overrides("geolocation", {"latitude": 48.2, "longitude": 16.37})
    where = b.evaluate(
        "new Promise((ok, fail) => navigator.geolocation.getCurrentPosition("
        "(p) => ok([p.coords.latitude, p.coords.longitude]), (e) => fail(e.message)))"
    )
    assert where == [48.2, 16.37]

    overrides("device", {"name": "iPhone 13"})
    assert "iPhone" in b.evaluate("navigator.userAgent") and b.evaluate("[screen.width, devicePixelRatio]") == [390, 3]
    for setting in ("media", "timezone", "locale", "geolocation", "device"):
        assert setting not in overrides(setting, {"clear": True})
    assert b.evaluate("matchMedia('(prefers-color-scheme: dark)').matches") is False
    assert "iPhone" not in b.evaluate("navigator.userAgent")


def test_a_page_in_the_slot_believes_it_is_online(b: Browser, site: ControlSite) -> None:
    b.goto(f"{site.url}/blank")
    assert b.evaluate("fetch('/api/ping').then(() => 'reached', () => 'failed')") == "reached"
    assert b.evaluate("navigator.onLine") is True


def test_highlight_outlines_a_ref_and_a_trace_is_a_zip_served_at_its_url(b: Browser, site: ControlSite) -> None:
    b.goto(f"{site.url}/form")
    snap = b.snapshot(interactive="true")
    send = ref_of(snap, "button", "Send message")
    assert ok(b.post("/highlight", {"ref": send}))["url"] == f"{site.url}/form"
    refused(b.post("/highlight", {"ref": "e9999"}), 409, "REF_STALE")

    ok(b.post("/trace/start"))
    refused(b.post("/trace/start"), 409, "TRACE_RUNNING")
    b.act(kind="click", ref=ref_of(snap, "button", "Add a button"))
    stopped = ok(b.post("/trace/stop"))
    archive = b.fetch(stopped["url"])
    assert archive.startswith(b"PK") and Path(stopped["path"]).read_bytes() == archive
    names = zipfile.ZipFile(io.BytesIO(archive)).namelist()
    assert any(name.endswith(".trace") for name in names), names
    refused(b.post("/trace/stop"), 409, "TRACE_NOT_RUNNING")
