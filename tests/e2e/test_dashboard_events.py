"""The session page on the event stream (spec §4.8), in a real browser.

The server on this branch has no ``GET /v3/sessions/{id}/events`` yet (the page falls back to polling there, see
``test_dashboard.py``), so the page's stream client is checked against a stand-in that speaks the documented wire:
``message`` events with ``id:`` = message id, ``status``, ``activity`` and ``code`` events, a dropped connection
and a resume with ``Last-Event-ID``. The stand-in serves the real page (``pages.session_page``) and the real
scripts, so only the API behind them differs.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
from playwright.async_api import async_playwright
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response, StreamingResponse
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from openbrowse.api.dashboard.pages import STATIC, session_page
from openbrowse.api.dashboard.routes import STATIC_DIR
from openbrowse.api.schemas import SessionView
from tests.support.asgi_thread import ThreadedServer

pytestmark = pytest.mark.e2e

CHROMIUM = "/usr/bin/chromium"
SESSION_ID = "5e55a0e1-0000-4000-8000-000000000001"
NOW = "2026-11-30T12:00:00.000000+00:00"
OUTPUT = {"rows": [{"a": 1, "b": "x"}, {"a": 2, "b": "y"}]}


def message(n: int, kind: str, summary: str, data: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "id": f"m{n}",
        "sessionId": SESSION_ID,
        "role": "user" if kind == "user_message" else "ai",
        "type": kind,
        "summary": summary,
        "data": json.dumps(data) if data is not None else "",
        "screenshotUrl": None,
        "hidden": False,
        "createdAt": NOW,
    }


MESSAGES = [
    message(1, "user_message", "Collect the rows."),
    message(
        2, "result", "Read the table.", {"step": 1, "category": "read", "actions": ["read_pages"], "see": "A table"}
    ),
    message(3, "completion", "Task completed successfully", {"output": json.dumps(OUTPUT)}),
]


def session(status: str, output: Any = None) -> dict[str, Any]:
    view = SessionView(
        id=SESSION_ID,
        status=status,
        model="gpt-5.6-terra",
        title="Collect the rows.",
        output=output,
        output_schema=None,
        step_count=1,
        last_step_summary=None,
        is_task_successful=True if output else None,
        live_url=None,
        profile_id=None,
        max_cost_usd=None,
        total_input_tokens=10,
        total_output_tokens=5,
        llm_cost_usd="0.01",
        total_cost_usd="0.01",
        reasoning_effort="low",
        thinking_level="low",
        failure_kind=None,
        failure_status_code=None,
        keep_alive=False,
        captcha_cost_usd="0",
        browser_live=False,
        created_at=NOW,
        updated_at=NOW,
    )
    return view.model_dump(by_alias=True)


def sse(event: str, data: Any, event_id: str | None = None) -> bytes:
    head = f"id: {event_id}\n" if event_id else ""
    return f"{head}event: {event}\ndata: {json.dumps(data)}\n\n".encode()


class EventStreamStandIn:
    """The session API with an event stream: the first connection drops after two messages; the resume ends it."""

    def __init__(self) -> None:
        self.state = session("running")
        self.published = MESSAGES[:1]
        self.resumed_from: list[str | None] = []
        self.drop_first = threading.Event()

    async def page(self, _: Request) -> HTMLResponse:
        return HTMLResponse(session_page(SessionView.model_validate(self.state)))

    async def get(self, _: Request) -> JSONResponse:
        return JSONResponse(self.state)

    async def messages(self, request: Request) -> JSONResponse:
        after = request.query_params.get("after")
        ids = [m["id"] for m in self.published]
        start = ids.index(after) + 1 if after in ids else 0
        return JSONResponse({"messages": self.published[start:], "hasMore": False})

    async def events(self, request: Request) -> Response:
        self.resumed_from.append(request.headers.get("last-event-id"))
        first = len(self.resumed_from) == 1
        return StreamingResponse(self._first() if first else self._resumed(), media_type="text/event-stream")

    async def _first(self) -> AsyncIterator[bytes]:
        yield b"retry: 300\n\n"
        self.published = MESSAGES[:2]
        for item in self.published:  # a stream opened without Last-Event-ID replays the feed
            yield sse("message", item, item["id"])
        yield sse("code", {"name": "scrape.js", "code": "return [...document.rows];", "status": "Running"})
        yield sse("activity", {"label": "Reading pages…", "spin": True, "step": 2, "stream": None})
        while not self.drop_first.is_set():
            await asyncio.sleep(0.05)

    async def _resumed(self) -> AsyncIterator[bytes]:
        self.published = MESSAGES
        yield sse("message", MESSAGES[2], MESSAGES[2]["id"])
        self.state = session("stopped", OUTPUT)
        status = {k: self.state[k] for k in ("status", "liveUrl", "stepCount", "totalCostUsd", "isTaskSuccessful")}
        yield sse("status", {**status, "activity": None})

    def app(self) -> Starlette:
        base = f"/v3/sessions/{SESSION_ID}"
        return Starlette(
            routes=[
                Route(f"/sessions/{SESSION_ID}", self.page),
                Route(base, self.get),
                Route(f"{base}/messages", self.messages),
                Route(f"{base}/events", self.events),
                Mount(STATIC, StaticFiles(directory=STATIC_DIR)),
            ]
        )


@pytest.fixture
def stand_in() -> Iterator[tuple[EventStreamStandIn, ThreadedServer]]:
    api = EventStreamStandIn()
    with ThreadedServer(api.app()) as served:
        yield api, served
        api.drop_first.set()


async def test_the_page_follows_the_event_stream_across_a_reconnect(
    stand_in: tuple[EventStreamStandIn, ThreadedServer],
) -> None:
    api, served = stand_in
    errors: list[str] = []
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=["--no-sandbox"])
        try:
            page = await browser.new_page(viewport={"width": 1280, "height": 800})
            page.on("pageerror", lambda error: errors.append(str(error)))
            await page.goto(f"{served.url}/sessions/{SESSION_ID}")
            await page.locator("body[data-feed-mode=sse]").wait_for(state="attached", timeout=20_000)
            await page.locator("#activity", has_text="Reading pages… (step 2)").wait_for()
            assert await page.text_content("#code") == "return [...document.rows];"
            assert "scrape.js" in (await page.text_content("#code-meta") or "")
            await page.locator("#feed li[data-id=m2]").wait_for()

            api.drop_first.set()  # the connection drops; the browser resumes with Last-Event-ID
            await page.locator("body[data-status=stopped]").wait_for(state="attached", timeout=20_000)
            await page.locator("#feed li[data-id=m3]").wait_for()
            ids = await page.locator("#feed li").evaluate_all("cards => cards.map(card => card.dataset.id)")
            assert ids == ["m1", "m2", "m3"]  # the replay on the first connection showed nothing twice
            assert api.resumed_from[:2] == [None, "m2"]
            assert await page.is_hidden("#activity")
            await page.click("[data-tab=output]")
            assert await page.locator("#output table tbody tr").count() == 2
        finally:
            await browser.close()
    assert not errors, errors
