"""A fake CapSolver API on loopback (createTask / getTaskResult) and a fixture page with a reCAPTCHA-v2-like widget.

Outcomes are scripted per solve (solution token, reported cost, a createTask error or a failed task); every
createTask body is recorded, so a test can tell whether a solve was ever requested.
"""

from __future__ import annotations

import html
import itertools
import threading
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Route

from tests.support.asgi_thread import ThreadedServer

SITE_KEY = "6LfakeSiteKeyForOpenBrowseTests000000000"
API_KEY = "CAP-test-key"


@dataclass(frozen=True)
class Outcome:
    """What the fake answers for one solve."""

    token: str = "fake-token-0001"
    cost: str | None = "0.0012"
    processing_polls: int = 0
    create_error: str | None = None
    fail: str | None = None


@dataclass
class CapSolverState:
    created: list[dict[str, Any]] = field(default_factory=list)
    polls: int = 0
    client_keys: list[str] = field(default_factory=list)
    script: deque[Outcome] = field(default_factory=deque)
    default: Outcome = field(default_factory=Outcome)
    tasks: dict[str, tuple[Outcome, dict[str, Any]]] = field(default_factory=dict)
    task_polls: dict[str, int] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)


def _solution(task: dict[str, Any], token: str) -> dict[str, Any]:
    kind = str(task.get("type", ""))
    if kind.startswith("ReCaptcha"):
        return {"gRecaptchaResponse": token, "userAgent": "fake"}
    if kind == "ImageToTextTask":
        return {"text": token}
    return {"token": token}


def capsolver_app(state: CapSolverState, ids: itertools.count[int]) -> Starlette:
    async def create_task(request: Request) -> Response:
        body = await request.json()
        with state.lock:
            state.client_keys.append(str(body.get("clientKey")))
            state.created.append(body.get("task") or {})
            outcome = state.script.popleft() if state.script else state.default
            if outcome.create_error:
                return JSONResponse(
                    {"errorId": 1, "errorCode": outcome.create_error, "errorDescription": "scripted createTask error"}
                )
            task_id = f"task-{next(ids)}"
            state.tasks[task_id] = (outcome, body.get("task") or {})
        return JSONResponse({"errorId": 0, "taskId": task_id, "status": "idle"})

    async def get_task_result(request: Request) -> Response:
        body = await request.json()
        task_id = str(body.get("taskId"))
        with state.lock:
            state.polls += 1
            if task_id not in state.tasks:
                return JSONResponse({"errorId": 1, "errorCode": "ERROR_TASKID_INVALID", "errorDescription": task_id})
            outcome, task = state.tasks[task_id]
            seen = state.task_polls[task_id] = state.task_polls.get(task_id, 0) + 1
        cost = {"cost": outcome.cost} if outcome.cost is not None else {}
        if seen <= outcome.processing_polls:
            return JSONResponse({"errorId": 0, "status": "processing"})
        if outcome.fail:
            return JSONResponse(
                {
                    "errorId": 1,
                    "errorCode": outcome.fail,
                    "errorDescription": "scripted failure",
                    "status": "failed",
                    **cost,
                }
            )
        return JSONResponse({"errorId": 0, "status": "ready", "solution": _solution(task, outcome.token), **cost})

    return Starlette(
        routes=[
            Route("/createTask", create_task, methods=["POST"]),
            Route("/getTaskResult", get_task_result, methods=["POST"]),
        ]
    )


class FakeCapSolver:
    def __init__(self) -> None:
        self.state = CapSolverState()
        self._server = ThreadedServer(capsolver_app(self.state, itertools.count(1)))

    @property
    def url(self) -> str:
        return self._server.url

    def env(self) -> dict[str, str]:
        return {"CAPSOLVER_API_KEY": API_KEY, "CAPSOLVER_BASE_URL": self.url}

    def script(self, *outcomes: Outcome) -> None:
        with self.state.lock:
            self.state.script.extend(outcomes)

    @property
    def created(self) -> list[dict[str, Any]]:
        with self.state.lock:
            return list(self.state.created)

    def __enter__(self) -> FakeCapSolver:
        self._server.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._server.close()


# --------------------------------------------------------------------------------------------------------------
# The page a CAPTCHA blocks


def _widget_page(title: str, sitekey_attr: str, action: str) -> HTMLResponse:
    return HTMLResponse(
        f"<!doctype html><html><head><title>{html.escape(title)}</title>"
        "<style>body{font:18px sans-serif;margin:40px}</style></head><body>"
        f"<h1>{html.escape(title)}</h1><p>Prove you are human to see the price list.</p>"
        f'<form method="post" action="{action}">'
        f'<div class="g-recaptcha" {sitekey_attr} data-callback="onCaptchaSolved"></div>'
        '<textarea id="g-recaptcha-response" name="g-recaptcha-response" style="display:none"></textarea>'
        '<p id="callback-state">waiting</p>'
        '<button type="submit">Check and continue</button></form>'
        "<script>function onCaptchaSolved(token) {"
        " document.getElementById('callback-state').textContent = 'callback got ' + token.length + ' chars'; }"
        "</script></body></html>"
    )


@dataclass
class CaptchaPageState:
    expected_token: str = Outcome().token
    submissions: list[str] = field(default_factory=list)


def captcha_page_app(state: CaptchaPageState) -> Starlette:
    async def guarded(request: Request) -> Response:
        return _widget_page("Guarded price list", f'data-sitekey="{SITE_KEY}"', "/guarded")

    async def keyless(request: Request) -> Response:
        return _widget_page("Guarded without key", "", "/guarded")

    async def submit(request: Request) -> Response:
        form = await request.form()
        token = str(form.get("g-recaptcha-response") or "")
        state.submissions.append(token)
        if token == state.expected_token:
            body = "<h1>verified</h1><p>Price list: Blue Widget 42.00 EUR.</p>"
        else:
            body = "<h1>rejected</h1><p>The CAPTCHA answer was missing or wrong.</p>"
        return HTMLResponse(f"<!doctype html><html><head><title>Result</title></head><body>{body}</body></html>")

    return Starlette(
        routes=[Route("/guarded", guarded), Route("/guarded", submit, methods=["POST"]), Route("/keyless", keyless)]
    )


class CaptchaPage:
    def __init__(self) -> None:
        self.state = CaptchaPageState()
        self._server = ThreadedServer(captcha_page_app(self.state))

    @property
    def url(self) -> str:
        return self._server.url

    def __enter__(self) -> CaptchaPage:
        self._server.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._server.close()
