"""Console, page errors, requests, response bodies and dialogs of a real page through the control routes."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse
from starlette.routing import Route

from openbrowse.control import observe, page_log
from openbrowse.control.call import ControlCall
from openbrowse.control.engine import ControlEngine
from openbrowse.control.errors import ControlError
from tests.support.asgi_thread import ThreadedServer

LOGGING_PAGE = """<!doctype html><title>log</title><body>
<script>
console.log("hello from the page");
console.error("something bad");
fetch("/api/data", {headers: {"Authorization": "Bearer s3cret", "X-Api-Key": "k3y", "X-Debug": "1"}})
  .then((r) => r.json()).then((d) => { document.body.dataset.got = d.value; });
setTimeout(() => { throw new Error("boom"); }, 0);
</script></body>"""

DIALOG_PAGE = "<!doctype html><title>dialogs</title><body>dialogs</body>"


async def api_data(request: Request) -> JSONResponse:
    return JSONResponse({"value": "v" * 50, "seen": request.headers.get("x-debug")})


def site() -> Starlette:
    return Starlette(
        routes=[
            Route("/log", lambda _: HTMLResponse(LOGGING_PAGE)),
            Route("/dialogs", lambda _: HTMLResponse(DIALOG_PAGE)),
            Route("/api/data", api_data),
        ]
    )


@pytest.fixture(scope="module")
def server() -> Iterator[ThreadedServer]:
    with ThreadedServer(site()) as running:
        yield running


async def call(handler: Any, engine: ControlEngine, **body: Any) -> dict[str, Any]:
    result: dict[str, Any] = await handler(ControlCall(engine=engine, body=body))
    return result


async def test_console_errors_and_requests_are_logged(engine: ControlEngine, server: ThreadedServer) -> None:
    page = await engine.page(None)
    async with page.expect_event("pageerror"):
        await page.goto(f"{server.url}/log")
    body = await call(observe.response_body, engine, url="**/api/data", maxChars=20)
    assert body["status"] == 200
    assert body["url"] == f"{server.url}/api/data"
    assert body["truncated"] is True
    assert len(body["body"]) == 20
    await page.wait_for_function("document.body.dataset.got")

    everything = await call(observe.console_messages, engine)
    texts = [entry["text"] for entry in everything["entries"]]
    assert "hello from the page" in texts and "something bad" in texts
    errors_only = await call(observe.console_messages, engine, level="error")
    error_texts = [entry["text"] for entry in errors_only["entries"]]
    assert "something bad" in error_texts and "hello from the page" not in error_texts
    assert errors_only["messages"] == errors_only["entries"]

    errors = await call(observe.page_errors, engine, clear=True)
    assert any("boom" in entry["message"] for entry in errors["entries"])
    assert (await call(observe.page_errors, engine))["entries"] == []

    requests = await call(observe.network_requests, engine, filter="api/data")
    [entry] = requests["entries"]
    assert entry["method"] == "GET" and entry["status"] == 200 and entry["ok"] is True
    assert entry["resourceType"] == "fetch"
    assert entry["headers"]["authorization"] == page_log.REDACTED
    assert entry["headers"]["x-api-key"] == page_log.REDACTED
    assert entry["headers"]["x-debug"] == "1"
    documents = await call(observe.network_requests, engine, filter="document", clear=True)
    assert [item["url"] for item in documents["entries"]] == [f"{server.url}/log"]
    assert (await call(observe.network_requests, engine))["entries"] == []


async def test_response_body_waits_for_the_next_match(engine: ControlEngine, server: ThreadedServer) -> None:
    page = await engine.page(None)
    await page.goto(f"{server.url}/dialogs")
    await page.evaluate("setTimeout(() => fetch('/api/data?late=1'), 50)")
    body = await call(observe.response_body, engine, url="**/api/data?late=1", timeoutMs=10_000)
    assert body["status"] == 200 and body["truncated"] is False
    assert '"value"' in body["body"]


async def test_response_body_without_match_fails_with_a_sentence(engine: ControlEngine, server: ThreadedServer) -> None:
    page = await engine.page(None)
    await page.goto(f"{server.url}/dialogs")
    with pytest.raises(ControlError) as caught:
        await call(observe.response_body, engine, url="**/never", timeoutMs=300)
    assert caught.value.status == 422
    assert "No response matched" in caught.value.message


async def test_pending_dialog_is_answered_by_the_hook(engine: ControlEngine, server: ThreadedServer) -> None:
    page = await engine.page(None)
    await page.goto(f"{server.url}/dialogs")
    assert (await call(observe.dialogs, engine))["pending"] == []
    async with page.expect_event("dialog"):
        await page.evaluate("setTimeout(() => { document.body.dataset.answer = prompt('Name?', 'nobody'); }, 0)")
    listed = await call(observe.dialogs, engine)
    [pending] = listed["pending"]
    assert pending["type"] == "prompt" and pending["message"] == "Name?" and pending["defaultValue"] == "nobody"
    assert engine.state(page).blocked() is not None

    answered = await call(observe.dialog_hook, engine, accept=True, promptText="Ada", dialogId=pending["id"])
    assert answered["armed"] is False
    await page.wait_for_function("document.body.dataset.answer === 'Ada'")
    after = await call(observe.dialogs, engine)
    assert after["pending"] == []
    assert after["recent"][-1]["closedBy"] == "agent"
    assert engine.state(page).blocked() is None


async def test_armed_answer_takes_the_next_dialog(engine: ControlEngine, server: ThreadedServer) -> None:
    page = await engine.page(None)
    await page.goto(f"{server.url}/dialogs")
    armed = await call(observe.dialog_hook, engine, accept=False)
    assert armed["armed"] is True
    assert await page.evaluate("confirm('Delete everything?')") is False
    recent = (await call(observe.dialogs, engine))["recent"]
    assert recent[-1]["message"] == "Delete everything?" and recent[-1]["closedBy"] == "armed"
    assert engine.state(page).dialog_arm is None


async def test_unknown_dialog_id_is_refused(engine: ControlEngine, server: ThreadedServer) -> None:
    page = await engine.page(None)
    await page.goto(f"{server.url}/dialogs")
    with pytest.raises(ControlError) as caught:
        await call(observe.dialog_hook, engine, accept=True, dialogId="d99")
    assert caught.value.status == 409
    with pytest.raises(ControlError) as missing:
        await call(observe.dialog_hook, engine)
    assert missing.value.status == 400
