"""A raw browser's CDP token is a browser, not the host (spec §24.6): the attacks a CDP client can try on the
server's files, through the proxied ``cdpUrl`` of a real server, and the agent's ``upload_file`` of a host file.
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
from starlette.responses import HTMLResponse, JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

from tests.e2e.agent_support import agent_steps, step_requests, token
from tests.e2e.browser_support import CdpClient
from tests.e2e.servers import agent_env, running_server
from tests.fakes.llm_request import LLMRequest, find_index
from tests.fakes.llm_script import agent_step, done, navigate
from tests.fakes.llm_server import FakeProvider
from tests.support import loopback
from tests.support.asgi_thread import ThreadedServer
from tests.support.display import needs_display
from tests.support.server import ServerProcess, wait_until
from tests.support.waiting import wait_for

pytestmark = [pytest.mark.e2e, pytest.mark.display, needs_display]

API_KEY = "browser-files-key"
AUTH = {"Authorization": f"Bearer {API_KEY}"}
SECRET = "OPENBROWSE_TEST_SECRET=sk-do-not-leak-4242"
FORM = (
    "<!doctype html><html><head><title>Upload form</title></head><body>"
    '<h1>Send your file</h1><input type="file" id="f" aria-label="Resume upload" title="Resume upload">'
    "<script>document.getElementById('f').addEventListener('change', async (event) => {"
    "  for (const file of event.target.files) {"
    "    await fetch('/got', {method: 'POST', headers: {'x-name': file.name}, body: await file.text()});"
    "  }"
    "});</script></body></html>"
)


class Received:
    def __init__(self) -> None:
        self.files: list[tuple[str, str]] = []


def site_app(received: Received) -> Starlette:
    async def form(_: Request) -> HTMLResponse:
        return HTMLResponse(FORM)

    async def got(request: Request) -> Response:
        received.files.append((request.headers.get("x-name", ""), (await request.body()).decode(errors="replace")))
        return PlainTextResponse("ok")

    async def report(_: Request) -> Response:
        return PlainTextResponse(
            "quarterly numbers", headers={"Content-Disposition": 'attachment; filename="report.txt"'}
        )

    async def note(_: Request) -> JSONResponse:
        return JSONResponse({"note": "a file the agent fetched itself"})

    return Starlette(
        routes=[
            Route("/form", form),
            Route("/got", got, methods=["POST"]),
            Route("/report", report),
            Route("/note.json", note),
        ]
    )


@pytest.fixture(scope="module")
def received() -> Received:
    return Received()


@pytest.fixture(scope="module")
def site(received: Received) -> Iterator[ThreadedServer]:
    with ThreadedServer(site_app(received)) as served:
        yield served


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, fake: FakeProvider) -> Iterator[ServerProcess]:
    with running_server(tmp_path_factory.mktemp("files-home"), agent_env(fake, API_KEY=API_KEY)) as process:
        (process.home / ".env").write_text(SECRET + "\n")  # what an attacker is after: the server's own secrets
        yield process


def slot_dir(server: ServerProcess) -> Path:
    return server.home / "data" / "run" / "slots" / f"slot-{server.slot_base}"


def open_form(cdp: CdpClient, url: str) -> tuple[str, str]:
    """Load the form in the browser's tab; return (CDP session, the file input's remote object id)."""
    session = cdp.page_session()
    cdp.call("Page.navigate", {"url": url}, session)
    found: dict[str, Any] = {}

    def input_ready() -> bool:
        result = cdp.call("Runtime.evaluate", {"expression": "document.getElementById('f')"}, session)["result"]
        found.update(result)
        return bool(result.get("objectId"))

    wait_until(input_ready, 20, what="the form's file input")
    return session, str(found["objectId"])


def chosen_files(cdp: CdpClient, session: str) -> int:
    result = cdp.call("Runtime.evaluate", {"expression": "document.getElementById('f').files.length"}, session)
    return int(result["result"]["value"])


def finished_download(folder: Path, name: str = "report.txt") -> str | None:
    """The download's text once Chromium is done with it: it reserves the final name as an empty file first and
    writes into a ``.crdownload`` beside it, so the name alone says nothing about the content."""
    if any(folder.glob("*.crdownload")) or not (folder / name).is_file():
        return None
    return (folder / name).read_text()


def cdp_error(cdp: CdpClient, method: str, params: dict[str, Any], session: str | None = None) -> str:
    with pytest.raises(RuntimeError) as refused:
        cdp.call(method, params, session)
    text = str(refused.value)
    assert "-32000" in text, text
    return text


# -- a raw CDP client ------------------------------------------------------------------------------------------
def test_a_file_input_gets_only_the_browsers_own_files(
    server: ServerProcess, browser: dict[str, Any], site: ThreadedServer, received: Received
) -> None:
    received.files.clear()
    cdp = CdpClient(browser["cdpUrl"])
    try:
        session, input_id = open_form(cdp, f"{site.url}/form")
        secret = server.home / ".env"
        text = cdp_error(cdp, "DOM.setFileInputFiles", {"files": [str(secret)], "objectId": input_id}, session)
        assert "uploads" in text
        link = slot_dir(server) / "uploads" / "innocent.txt"
        link.symlink_to(secret)  # a link in the browser's own folder is followed to where it leads
        cdp_error(cdp, "DOM.setFileInputFiles", {"files": [str(link)], "objectId": input_id}, session)
        drop = {
            "type": "drop",
            "x": 10,
            "y": 10,
            "data": {"items": [], "files": [str(secret)], "dragOperationsMask": 1},
        }
        cdp_error(cdp, "Input.dispatchDragEvent", drop, session)
        assert chosen_files(cdp, session) == 0

        allowed = slot_dir(server) / "uploads" / "cv.txt"
        allowed.write_text("my own cv")
        cdp.call("DOM.setFileInputFiles", {"files": [str(allowed)], "objectId": input_id}, session)
        assert chosen_files(cdp, session) == 1
        wait_until(lambda: received.files, 30, what="the page sending the chosen file")
    finally:
        cdp.close()
    assert received.files == [("cv.txt", "my own cv")]
    assert all(SECRET not in body for _, body in received.files)


def test_downloads_land_in_the_browsers_downloads_folder_only(
    server: ServerProcess, browser: dict[str, Any], site: ThreadedServer, tmp_path: Path
) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    downloads = slot_dir(server) / "downloads"
    cdp = CdpClient(browser["cdpUrl"])
    try:
        cdp.call("Browser.setDownloadBehavior", {"behavior": "allow", "downloadPath": str(elsewhere)})
        session = cdp.page_session()
        cdp.call("Page.navigate", {"url": f"{site.url}/report"}, session)
        wait_until(lambda: finished_download(downloads) == "quarterly numbers", 20, what="the finished download")
        cdp_error(cdp, "Extensions.loadUnpacked", {"path": str(server.home)})
        cdp_error(cdp, "Page.navigate", {"url": f"file://{server.home}/.env"}, session)
    finally:
        cdp.close()
    assert (downloads / "report.txt").read_text() == "quarterly numbers"
    assert list(elsewhere.iterdir()) == []


def test_a_client_that_never_sets_downloads_still_downloads_into_the_folder(
    server: ServerProcess, browser: dict[str, Any], site: ThreadedServer
) -> None:
    downloads = slot_dir(server) / "downloads"
    cdp = CdpClient(browser["cdpUrl"])
    try:
        session = cdp.page_session()
        cdp.call("Page.navigate", {"url": f"{site.url}/report"}, session)
        wait_until(lambda: finished_download(downloads) == "quarterly numbers", 20, what="the finished download")
    finally:
        cdp.close()


async def test_playwright_still_connects_and_uploads_by_content(
    browser: dict[str, Any], site: ThreadedServer, received: Received, tmp_path: Path
) -> None:
    received.files.clear()
    local = tmp_path / "from-the-client.txt"
    local.write_text("sent by playwright")
    async with async_playwright() as playwright:
        remote = await playwright.chromium.connect_over_cdp(browser["cdpUrl"])
        page = remote.contexts[0].pages[0]
        await page.goto(f"{site.url}/form")
        await page.set_input_files("#f", str(local))  # a remote browser gets the bytes, never the client's path
        assert await page.evaluate("document.getElementById('f').files[0].name") == "from-the-client.txt"
        await remote.close()
    wait_until(lambda: received.files, 30, what="the page sending the chosen file")
    assert received.files == [("from-the-client.txt", "sent by playwright")]


# -- the agent's upload_file -----------------------------------------------------------------------------------
def _upload(path: str) -> Any:
    def choose(request: LLMRequest) -> dict[str, Any]:
        return agent_step({"upload_file": {"index": find_index(request, "Resume upload"), "path": path}})

    return choose


def test_upload_file_takes_only_the_sessions_own_files(
    server: ServerProcess, fake: FakeProvider, site: ThreadedServer, received: Received
) -> None:
    received.files.clear()
    marker = token("UPLOAD")
    secret = server.home / ".env"
    own_file = "fetch_127.0.0.1_note.json.json"
    fake.script(
        marker,
        [
            agent_step([{"http_fetch": {"url": f"{site.url}/note.json"}}]),
            navigate(f"{site.url}/form"),
            _upload(str(secret)),
            _upload("../../../.env"),
            _upload(own_file),
            done("uploaded"),
        ],
        when=agent_steps,
    )
    session = loopback.post(
        f"{server.v3}/sessions", json={"task": f"{marker} Upload my file at {site.url}/form"}, headers=AUTH, timeout=30
    )
    assert session.status_code == 200, session.text
    sid = session.json()["id"]
    finished = wait_until_status_with_key(server, sid)
    assert finished["status"] == "stopped", (finished, server.log()[-4000:])
    requests = step_requests(fake, marker)
    assert len(requests) == 6
    for refused in (requests[3].text, requests[4].text):
        assert "is not in this session's files" in refused, refused[-2000:]
    wait_until(lambda: received.files, 10, what="the page sending the uploaded file")
    assert [name for name, _ in received.files] == [own_file]
    assert "a file the agent fetched itself" in received.files[0][1]
    assert SECRET not in json.dumps(received.files)


def wait_until_status_with_key(server: ServerProcess, session_id: str) -> dict[str, Any]:
    """``wait_until_status`` for a server with an API key."""

    def ended() -> dict[str, Any] | None:
        record: dict[str, Any] = loopback.get(f"{server.v3}/sessions/{session_id}", headers=AUTH, timeout=30).json()
        return record if record.get("status") in {"stopped", "error", "idle", "timed_out"} else None

    return wait_for(ended, 120, interval=0.2, what=f"session {session_id} ending")


def test_the_agents_downloads_end_up_in_the_sessions_files(
    server: ServerProcess, fake: FakeProvider, site: ThreadedServer
) -> None:
    marker = token("DOWNLOAD")
    fake.script(marker, [navigate(f"{site.url}/report"), done("downloaded")], when=agent_steps)
    session = loopback.post(
        f"{server.v3}/sessions", json={"task": f"{marker} Download {site.url}/report"}, headers=AUTH, timeout=30
    )
    assert session.status_code == 200, session.text
    sid = session.json()["id"]
    finished = wait_until_status_with_key(server, sid)
    assert finished["status"] == "stopped", (finished, server.log()[-4000:])
    saved = server.home / "data" / "sessions" / sid / "downloads" / "report.txt"
    assert saved.read_text() == "quarterly numbers"
    assert not (slot_dir(server) / "downloads" / "report.txt").exists()
