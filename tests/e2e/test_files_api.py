"""Downloads, uploads and file URLs (spec §22.2, §22.3) through a real server, a real slot and the official SDK.

A page of download links is clicked by the agent (the scripted fake provider) and by a Playwright client attached
to a raw browser's ``cdpUrl``; both downloads show up in the listings (paged with ``limit``/``cursor``) and come back
byte-identical over signed URLs that need no key. Uploads reach a form page through the agent's ``upload_file``
and through the control API's file chooser; the form posts the bytes back to the fixture site.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import httpx
import pytest
from browser_use_sdk.generated.v4.models import BrowserDownloadListResponse
from browser_use_sdk.v4 import AsyncBrowserUse as AsyncBrowserUseV4
from playwright.async_api import async_playwright

from openbrowse.api.file_urls import FileUrlSigner
from tests.e2e.agent_support import agent_steps, settled_with, token
from tests.e2e.browser_support import create_browser, forwarded_for, stop_browser
from tests.e2e.files_site import DOWNLOAD_NAMES, Received, file_bytes, files_site
from tests.e2e.servers import SHARED_API_KEY, agent_env, server_fixture
from tests.fakes.llm_request import LLMRequest, find_index
from tests.fakes.llm_script import agent_step, click_on, done, navigate
from tests.fakes.llm_server import FakeProvider
from tests.support import loopback
from tests.support.asgi_thread import ThreadedServer
from tests.support.display import needs_display
from tests.support.server import ServerProcess, wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.display, needs_display]

API_KEY = SHARED_API_KEY


@pytest.fixture(scope="module")
def received() -> Received:
    return Received()


@pytest.fixture(scope="module")
def site(received: Received) -> Iterator[ThreadedServer]:
    with ThreadedServer(files_site(received)) as served:
        yield served


# one server for the control, files and MCP-session modules of this test process (tests/e2e/servers.py)
server = server_fixture(lambda fake: agent_env(fake, API_KEY=API_KEY), slots=2, shared=True)


@pytest.fixture
async def sdk(server: ServerProcess) -> AsyncIterator[AsyncBrowserUseV4]:
    """The official SDK's client that has ``browsers.downloads`` (its v4 surface, same paths as our /v3)."""
    client = AsyncBrowserUseV4(api_key=API_KEY, base_url=server.v3, max_retries=0)
    yield client
    await client.close()


def signer_of(server: ServerProcess) -> FileUrlSigner:
    """The server's own signer (its key is in the data directory), to forge an expired link for the test."""
    return FileUrlSigner.from_key_file(server.home / "data" / "secrets" / "file-url.key")


def run_task(http: httpx.Client, task: str, **body: Any) -> dict[str, Any]:
    created = http.post("/v3/sessions", json={"task": task, **body})
    assert created.status_code == 200, created.text
    return settled_with(http, created.json()["id"])


def with_query(url: str, **changes: str) -> str:
    parts = urlsplit(url)
    query = {key: values[0] for key, values in parse_qs(parts.query).items()}
    query.update(changes)
    return parts._replace(query=urlencode(query)).geturl()


# -- a raw browser's Playwright client downloads ----------------------------------------------------------------
async def test_playwright_downloads_are_listed_paged_and_served_by_signed_url(
    server: ServerProcess, http: httpx.Client, sdk: AsyncBrowserUseV4, site: ThreadedServer
) -> None:
    browser = create_browser(http)
    browser_id = browser["id"]
    try:
        async with async_playwright() as playwright:
            remote = await playwright.chromium.connect_over_cdp(browser["cdpUrl"])
            page = remote.contexts[0].pages[0]
            await page.goto(f"{site.url}/downloads")
            for name in DOWNLOAD_NAMES:
                async with page.expect_download() as started:
                    await page.click(f"#{name.split('.')[0]}")
                download = await started.value
                assert download.suggested_filename == name
            await remote.close()

        async def listed() -> dict[str, int]:
            listing = await sdk.browsers.downloads(browser_id)
            return {item.path: item.size for item in listing.files}

        expected = {name: len(file_bytes(name)) for name in DOWNLOAD_NAMES}
        deadline = time.monotonic() + 30
        while (seen := await listed()) != expected:  # Chromium finishes writing after the click's events
            assert time.monotonic() < deadline, f"downloads listed: {seen}, wanted {expected}"
            await asyncio.sleep(0.1)

        first = await sdk.browsers.downloads(browser_id, limit=2)
        assert [item.path for item in first.files] == ["alpha.bin", "beta.bin"]
        assert first.has_more and first.next_cursor
        assert all(item.url is None for item in first.files)
        second = await sdk.browsers.downloads(browser_id, limit=2, cursor=first.next_cursor, include_urls=True)
        assert [item.path for item in second.files] == ["gamma.bin"]
        assert not second.has_more and second.next_cursor is None
        assert second.files[0].url is not None
        live_url = second.files[0].url
        assert loopback.get(live_url, timeout=30).content == file_bytes("gamma.bin")  # while the browser is up
    finally:
        stop_browser(http, browser_id)

    after = await sdk.browsers.downloads(browser_id, include_urls=True)  # listed after the end too
    assert [(item.path, item.size) for item in after.files] == sorted(expected.items())
    for item in after.files:
        assert item.url is not None
        fetched = loopback.get(item.url, timeout=30)  # no key: the signature stands in for it
        assert fetched.status_code == 200, fetched.text
        assert fetched.content == file_bytes(item.path)
        assert fetched.headers["content-disposition"].startswith("attachment")
    saved = server.home / "data" / "browsers" / browser_id / "downloads"
    assert sorted(path.name for path in saved.iterdir()) == list(DOWNLOAD_NAMES)


def test_signed_urls_ranges_and_refusals(server: ServerProcess, http: httpx.Client, site: ThreadedServer) -> None:
    browser = create_browser(http)
    browser_id = browser["id"]
    try:
        base = f"/v3/browsers/{browser_id}/browser"
        assert http.post(f"{base}/navigate", json={"url": f"{site.url}/file/beta.bin"}).status_code in {200, 422}
        wait_until(
            lambda: "beta.bin" in [f["path"] for f in http.get(f"/v3/browsers/{browser_id}/downloads").json()["files"]],
            30,
            what="the download listed",
        )
    finally:
        stop_browser(http, browser_id)
    content = file_bytes("beta.bin")
    listing = http.get(f"/v3/browsers/{browser_id}/downloads", params={"includeUrls": "true"}).json()
    url = listing["files"][0]["url"]

    ranged = loopback.get(url, headers={"Range": "bytes=1000-1999"}, timeout=30)
    assert ranged.status_code == 206
    assert ranged.content == content[1000:2000]
    assert ranged.headers["content-range"] == f"bytes 1000-1999/{len(content)}"
    keyed = http.get(f"/v3/browsers/{browser_id}/files/downloads/beta.bin", headers={"Range": "bytes=-10"})
    assert keyed.status_code == 206 and keyed.content == content[-10:]

    sig = parse_qs(urlsplit(url).query)["sig"][0]
    tampered = with_query(url, sig=("0" if sig[0] != "0" else "1") + sig[1:])
    other_file = url.replace("/beta.bin", "/alpha.bin")
    later = with_query(url, expires=str(int(parse_qs(urlsplit(url).query)["expires"][0]) + 3600))
    expired = server.base_url + signer_of(server).sign(
        "browsers", browser_id, "downloads", "beta.bin", now=time.time() - 3600
    )
    for refused in (tampered, other_file, later, expired):
        answer = loopback.get(refused, headers=forwarded_for(), timeout=30)
        assert answer.status_code == 403, (refused, answer.text)
        assert answer.json()["detail"] == "This file link is invalid or has expired; ask for a new one."
    bare = loopback.get(f"{server.v3}/browsers/{browser_id}/files/downloads/beta.bin", headers=forwarded_for())
    assert bare.status_code == 401
    unkeyed = loopback.get(f"{server.v3}/browsers/{browser_id}/downloads", headers=forwarded_for())
    assert unkeyed.status_code == 401

    assert http.get(f"/v3/browsers/{browser_id}/files/downloads/.env").status_code == 400
    assert http.get(f"/v3/browsers/{browser_id}/files/downloads/..%2F..%2Fbrowser_use.db").status_code == 404
    assert http.get(f"/v3/browsers/{browser_id}/files/secrets/beta.bin").status_code == 404
    assert http.get(f"/v3/browsers/{browser_id}/files/downloads/missing.bin").status_code == 404
    assert http.get("/v3/browsers/no-such-browser/downloads").status_code == 404
    link = server.home / "data" / "browsers" / browser_id / "downloads" / "key.bin"
    link.symlink_to(server.home / "data" / "secrets" / "file-url.key")
    assert http.get(f"/v3/browsers/{browser_id}/files/downloads/key.bin").status_code == 404
    names = [f["path"] for f in http.get(f"/v3/browsers/{browser_id}/downloads").json()["files"]]
    assert names == ["beta.bin"]
    bad_cursor = http.get(f"/v3/browsers/{browser_id}/downloads", params={"cursor": "Li4vZXRj"})
    assert bad_cursor.status_code == 400 and "cursor" in bad_cursor.json()["detail"]


# -- the agent's downloads and uploads -------------------------------------------------------------------------
def test_the_agents_click_download_is_listed_served_and_deleted_with_the_session(
    server: ServerProcess, http: httpx.Client, fake: FakeProvider, site: ThreadedServer, received: Received
) -> None:
    received.fetched.clear()
    marker = token("FILES-DOWNLOAD")
    fake.script(
        marker,
        [navigate(f"{site.url}/downloads"), click_on("Download beta.bin"), done("downloaded")],
        when=agent_steps,
    )
    finished = run_task(http, f"{marker} Download beta.bin from {site.url}/downloads")
    assert finished["status"] == "stopped", (finished, server.log()[-4000:])
    session_id = finished["id"]

    answer = http.get(f"/v3/sessions/{session_id}/downloads", params={"includeUrls": "true", "limit": 10})
    assert answer.status_code == 200, answer.text
    listing = BrowserDownloadListResponse.model_validate(answer.json())  # BU's own response model
    assert [item.path for item in listing.files] == ["beta.bin"], listing  # once, not browser-use's copy too
    assert received.fetched == ["beta.bin"]
    assert listing.has_more is False and listing.next_cursor is None
    for item in listing.files:
        assert item.url is not None and item.size == len(file_bytes("beta.bin"))
        assert loopback.get(item.url, timeout=30).content == file_bytes("beta.bin")

    assert http.delete(f"/v3/sessions/{session_id}").status_code == 204
    assert not (server.home / "data" / "sessions" / session_id).exists()
    assert http.get(f"/v3/sessions/{session_id}/downloads").status_code == 404
    assert listing.files[0].url
    assert loopback.get(listing.files[0].url, timeout=30).status_code == 404


def _upload(path: str) -> Callable[[LLMRequest], dict[str, Any]]:
    def choose(request: LLMRequest) -> dict[str, Any]:
        return agent_step({"upload_file": {"index": find_index(request, "Resume upload"), "path": path}})

    return choose


def test_an_uploaded_file_reaches_the_page_through_the_agents_upload_file(
    server: ServerProcess, http: httpx.Client, fake: FakeProvider, site: ThreadedServer, received: Received
) -> None:
    received.files.clear()
    shell = http.post("/v3/sessions", json={})
    assert shell.status_code == 200, shell.text
    session_id = shell.json()["id"]
    content = file_bytes("cv.bin", 150_000)
    stored = http.put(f"/v3/sessions/{session_id}/uploads/cv.bin", content=content)
    assert stored.status_code == 200, stored.text
    assert stored.json()["path"] == "cv.bin" and stored.json()["size"] == len(content)
    assert loopback.get(stored.json()["url"], timeout=30).content == content

    marker = token("FILES-UPLOAD")
    fake.script(marker, [navigate(f"{site.url}/form"), _upload("cv.bin"), done("uploaded")], when=agent_steps)
    finished = run_task(http, f"{marker} Upload cv.bin at {site.url}/form", sessionId=session_id)
    assert finished["status"] == "stopped", (finished, server.log()[-4000:])
    wait_until(lambda: received.files, 10, what="the page posting the uploaded file")
    assert received.files == [("cv.bin", content)]


def test_an_uploaded_file_reaches_the_page_through_the_control_file_chooser(
    server: ServerProcess, http: httpx.Client, site: ThreadedServer, received: Received
) -> None:
    received.files.clear()
    browser = create_browser(http)
    browser_id = browser["id"]
    content = file_bytes("photo.bin", 64_000)
    try:
        stored = http.put(f"/v3/browsers/{browser_id}/uploads/photo.bin", content=content)
        assert stored.status_code == 200, stored.text
        base = f"/v3/browsers/{browser_id}/browser"
        assert http.post(f"{base}/navigate", json={"url": f"{site.url}/form"}).status_code == 200
        chosen = http.post(f"{base}/hooks/file-chooser", json={"paths": ["photo.bin"], "element": "#f"})
        assert chosen.status_code == 200, chosen.text
        wait_until(lambda: received.files, 10, what="the page posting the chosen file")
        refused = http.post(
            f"{base}/hooks/file-chooser", json={"paths": ["../../secrets/file-url.key"], "element": "#f"}
        )
        assert refused.status_code == 403, refused.text
    finally:
        stop_browser(http, browser_id)
    assert received.files == [("photo.bin", content)]
    served = http.get(f"/v3/browsers/{browser_id}/files/uploads/photo.bin")
    assert served.status_code == 200 and served.content == content


def test_uploads_refuse_bad_names_unknown_owners_and_too_much(server: ServerProcess, http: httpx.Client) -> None:
    shell = http.post("/v3/sessions", json={})
    session_id = shell.json()["id"]
    for name in (".env", "%2E%2E", "a%5Cb", "%2E"):  # percent-encoded, so the client does not resolve them itself
        answer = http.put(f"/v3/sessions/{session_id}/uploads/{name}", content=b"x")
        assert answer.status_code == 400, (name, answer.text)
        assert answer.json()["detail"].startswith("A file name must be one plain name"), (name, answer.text)
    assert http.put("/v3/sessions/no-such-session/uploads/a.txt", content=b"x").status_code == 404
    unkeyed = loopback.put(f"{server.v3}/sessions/{session_id}/uploads/a.txt", content=b"x", headers=forwarded_for())
    assert unkeyed.status_code == 401

    def too_much() -> Iterator[bytes]:
        chunk = b"\0" * (1 << 20)
        for _ in range(101):
            yield chunk

    answer = http.put(f"/v3/sessions/{session_id}/uploads/huge.bin", content=too_much())
    assert answer.status_code == 413, answer.text
    assert answer.json()["detail"] == "The upload is larger than the limit of 100 MiB."
    uploads = server.home / "data" / "sessions" / session_id / "uploads"
    assert not uploads.exists() or list(uploads.iterdir()) == []
    ok = http.put(f"/v3/sessions/{session_id}/uploads/notes.txt", content=b"two MiB " * (1 << 18))
    assert ok.status_code == 200 and ok.json()["size"] == 2 << 20  # above the 1 MiB bound of other bodies
