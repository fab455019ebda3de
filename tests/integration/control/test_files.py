"""Screenshots, PDFs, traces, file inputs and downloads of a real page through the control routes."""

from __future__ import annotations

import asyncio
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.applications import Starlette
from starlette.responses import HTMLResponse, Response
from starlette.routing import Route

from openbrowse.control import files, transfers
from openbrowse.control.call import ControlCall
from openbrowse.control.engine import ControlEngine
from openbrowse.control.errors import ControlError
from openbrowse.control.tab_state import RefTarget
from tests.support.asgi_thread import ThreadedServer

PAGE = """<!doctype html><title>files</title><body>
<h1>Files</h1>
<button onclick="document.body.dataset.clicked = 'yes'">Go</button>
<input id="direct" type="file" aria-label="Direct">
<input id="picker" type="file" style="display:none">
<button onclick="document.getElementById('picker').click()">Choose</button>
<a href="/report.csv" download>Report</a>
<div style="height:3000px">tall</div>
<script>
for (const id of ["direct", "picker"]) {
  document.getElementById(id).addEventListener("change", async (event) => {
    const file = event.target.files[0];
    document.body.dataset[id] = file.name + ":" + await file.text();
  });
}
</script></body>"""

REPORT = "name,value\nada,1\n"


def site() -> Starlette:
    return Starlette(
        routes=[
            Route("/page", lambda _: HTMLResponse(PAGE)),
            Route(
                "/report.csv",
                lambda _: Response(
                    REPORT, media_type="text/csv", headers={"Content-Disposition": 'attachment; filename="report.csv"'}
                ),
            ),
            Route("/favicon.ico", lambda _: Response(status_code=204)),
        ]
    )


@pytest.fixture(scope="module")
def server() -> Iterator[ThreadedServer]:
    with ThreadedServer(site()) as running:
        yield running


async def call(handler: Any, engine: ControlEngine, **body: Any) -> dict[str, Any]:
    result: dict[str, Any] = await handler(ControlCall(engine=engine, body=body))
    return result


async def open_page(engine: ControlEngine, server: ThreadedServer) -> Any:
    page = await engine.page(None)
    await page.goto(f"{server.url}/page")
    state = engine.state(page)
    # What a role snapshot of this page would have stored.
    state.refs = {
        "e1": RefTarget(kind="role", role="button", name="Go"),
        "e2": RefTarget(kind="role", role="button", name="Choose"),
        "e3": RefTarget(kind="role", role="link", name="Report"),
        "e4": RefTarget(kind="role", role="button", name="Direct"),
        "e5": RefTarget(kind="role", role="heading", name="Files"),
    }
    state.refs_document = state.document
    return page


async def test_screenshots_are_written_as_png_and_jpeg(engine: ControlEngine, server: ThreadedServer) -> None:
    await open_page(engine, server)
    shot = await call(files.screenshot, engine)
    path = Path(shot["path"])
    assert path.parent == engine.target.files_dir / "screenshots"
    assert path.read_bytes().startswith(b"\x89PNG\r\n\x1a\n")
    assert shot["mimeType"] == "image/png" and shot["url"] == f"/files/screenshots/{path.name}"
    assert shot["targetId"] == await engine.target_id_of(await engine.page(None))

    full = await call(files.screenshot, engine, fullPage=True, type="jpeg")
    assert Path(full["path"]).read_bytes().startswith(b"\xff\xd8\xff") and full["mimeType"] == "image/jpeg"
    assert Path(full["path"]).stat().st_size > 0

    element = await call(files.screenshot, engine, ref="e5")
    labelled = await call(files.screenshot, engine, labels=True)
    assert Path(element["path"]).stat().st_size < Path(shot["path"]).stat().st_size
    assert Path(labelled["path"]).read_bytes().startswith(b"\x89PNG")
    assert await (await engine.page(None)).evaluate("document.getElementById('__openbrowse_labels__')") is None


async def test_full_page_element_screenshot_is_refused(engine: ControlEngine, server: ThreadedServer) -> None:
    await open_page(engine, server)
    with pytest.raises(ControlError) as caught:
        await call(files.screenshot, engine, fullPage=True, element="h1")
    assert caught.value.status == 400
    assert caught.value.message == "fullPage is not supported for element screenshots"


async def test_pdf_is_written(engine: ControlEngine, server: ThreadedServer) -> None:
    await open_page(engine, server)
    printed = await call(files.pdf, engine)
    assert Path(printed["path"]).read_bytes().startswith(b"%PDF")


async def test_trace_round_trip(engine: ControlEngine, server: ThreadedServer) -> None:
    page = await open_page(engine, server)
    await call(files.trace_start, engine)
    await page.get_by_role("button", name="Go").click()
    stopped = await call(files.trace_stop, engine)
    assert zipfile.is_zipfile(stopped["path"])
    with pytest.raises(ControlError) as caught:
        await call(files.trace_stop, engine)
    assert caught.value.status == 409


async def test_highlight_needs_a_live_ref(engine: ControlEngine, server: ThreadedServer) -> None:
    await open_page(engine, server)
    assert (await call(files.highlight, engine, ref="e1"))["ok"] is True
    with pytest.raises(ControlError) as caught:
        await call(files.highlight, engine, ref="e99")
    assert caught.value.status == 409


async def test_file_input_is_set_directly(engine: ControlEngine, server: ThreadedServer) -> None:
    page = await open_page(engine, server)
    (engine.target.folders.uploads / "cv.txt").write_text("hello upload")
    await call(transfers.file_chooser, engine, paths=["cv.txt"], element="#direct")
    await page.wait_for_function("document.body.dataset.direct === 'cv.txt:hello upload'")


async def test_file_chooser_opened_by_a_ref(engine: ControlEngine, server: ThreadedServer) -> None:
    page = await open_page(engine, server)
    (engine.target.folders.uploads / "note.txt").write_text("chosen")
    path = str(engine.target.folders.uploads / "note.txt")
    await call(transfers.file_chooser, engine, paths=[path], ref="e2")
    await page.wait_for_function("document.body.dataset.picker === 'note.txt:chosen'")


async def test_armed_file_chooser_takes_the_next_one(engine: ControlEngine, server: ThreadedServer) -> None:
    page = await open_page(engine, server)
    (engine.target.folders.uploads / "later.txt").write_text("armed")
    armed = await call(transfers.file_chooser, engine, paths=["later.txt"])
    assert armed["armed"] is True
    await page.get_by_role("button", name="Choose").click()
    await page.wait_for_function("document.body.dataset.picker === 'later.txt:armed'")


async def test_files_outside_uploads_are_forbidden(engine: ControlEngine, server: ThreadedServer) -> None:
    page = await open_page(engine, server)
    outside = engine.target.folders.uploads.parent / "secret.txt"
    outside.write_text("no")
    for bad in (str(outside), "../secret.txt"):
        with pytest.raises(ControlError) as caught:
            await call(transfers.file_chooser, engine, paths=[bad], element="#direct")
        assert caught.value.status == 403
    assert await page.evaluate("document.body.dataset.direct") is None


async def test_download_by_ref_lands_in_downloads(engine: ControlEngine, server: ThreadedServer) -> None:
    await open_page(engine, server)
    saved = await call(transfers.download, engine, ref="e3", path="numbers.csv")
    downloads = engine.target.folders.downloads
    assert Path(saved["path"]) == downloads / "numbers.csv"
    assert (downloads / "numbers.csv").read_text() == REPORT
    assert saved["suggestedFilename"] == "report.csv" and saved["size"] == len(REPORT)
    assert saved["download"]["path"] == saved["path"]
    with pytest.raises(ControlError) as caught:
        await call(transfers.download, engine, ref="e3", path="../escape.csv")
    assert caught.value.status == 403


async def test_wait_for_download(engine: ControlEngine, server: ThreadedServer) -> None:
    page = await open_page(engine, server)
    waiting = asyncio.create_task(call(transfers.wait_download, engine, timeoutMs=30_000))
    cdp = await engine.browser_cdp()
    async with asyncio.timeout(30):  # yield until the waiter listens for the download to begin
        while not waiting.done() and not cdp._impl_obj.listeners("Browser.downloadWillBegin"):
            await asyncio.sleep(0)
    await page.get_by_role("link", name="Report").click()
    saved = await waiting
    assert Path(saved["path"]).parent == engine.target.folders.downloads
    assert Path(saved["path"]).read_text() == REPORT


async def test_wait_for_download_times_out(engine: ControlEngine, server: ThreadedServer) -> None:
    await open_page(engine, server)
    with pytest.raises(ControlError) as caught:
        await call(transfers.wait_download, engine, timeoutMs=200)
    assert caught.value.status == 422 and "No download started" in caught.value.message
