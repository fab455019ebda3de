"""What a tab did, as the control API reports it: console, page errors, requests, responses and dialogs (spec §20.2).

:func:`watch` subscribes to one page's events once (the engine calls it for every page it sees) and fills the
page's :class:`~openbrowse.control.tab_state.TabState`. The routes below read those logs back. Dialogs are held
open: a pending one blocks the tab until ``POST /hooks/dialog`` answers it, or an armed answer takes the next one.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import weakref
from collections import deque
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from playwright.async_api import ConsoleMessage, Dialog, Error as PlaywrightError, Page, Request, Response

from openbrowse.control.call import ControlCall, route
from openbrowse.control.errors import ControlError, act_invalid, operation_failed
from openbrowse.control.tab_state import LOG_LIMIT, DialogArm, TabState

__all__ = ["is_secret_header", "now_iso", "redact_headers", "url_matches", "watch"]

TEXT_LIMIT = 2048  # per observed string: a page must not fill our memory through one console line
RESPONSES_KEPT = 100
REDACTED = "[redacted]"
_SECRET_HEADERS = {"authorization", "proxy-authorization", "cookie", "set-cookie", "api-key", "apikey", "api_key"}
_SECRET_PARTS = {"key", "apikey", "token", "secret", "password", "passwd", "auth", "signature", "session", "csrf"}
_CONSOLE_PRIORITY = {"debug": 0, "log": 1, "info": 1, "warn": 2, "warning": 2, "error": 3}


def now_iso() -> str:
    return datetime.now(UTC).isoformat()


def _clip(text: str) -> str:
    return text if len(text) <= TEXT_LIMIT else text[:TEXT_LIMIT]


def is_secret_header(name: str) -> bool:
    """``Authorization``, cookies, and ``X-…-Key``/``X-Api-Token``-style headers carry credentials."""
    lowered = name.strip().lower()
    if lowered in _SECRET_HEADERS:
        return True
    if not lowered.startswith(("x-", "x_")):
        return False
    return any(part in _SECRET_PARTS for part in re.split(r"[-_]", lowered[2:]))


def redact_headers(headers: dict[str, str]) -> dict[str, str]:
    return {name: (REDACTED if is_secret_header(name) else _clip(value)) for name, value in headers.items()}


def url_matches(pattern: str, url: str) -> bool:
    """The reference client's URL patterns: exact, ``*`` (anything), a glob (``**`` crosses ``/``), else a substring."""
    pattern = pattern.strip()
    if not pattern:
        return False
    if pattern in (url, "*"):
        return True
    if "*" not in pattern:
        return pattern in url
    parts: list[str] = []
    index = 0
    while index < len(pattern):
        if pattern.startswith("**", index):
            parts.append(".*")
            index += 2
        elif pattern[index] == "*":
            parts.append("[^/]*")
            index += 1
        else:
            parts.append(re.escape(pattern[index]))
            index += 1
    return re.fullmatch("".join(parts), url) is not None


@dataclass(slots=True)
class _PageLog:
    """What the routes need beyond TabState: live Playwright objects that cannot go into the state's plain lists."""

    dialogs: dict[str, Dialog] = field(default_factory=dict)
    next_dialog: int = 0
    next_request: int = 0
    requests: dict[Request, dict[str, Any]] = field(default_factory=dict)
    responses: deque[Response] = field(default_factory=lambda: deque(maxlen=RESPONSES_KEPT))


_logs: weakref.WeakKeyDictionary[Page, _PageLog] = weakref.WeakKeyDictionary()


def watch(page: Page, state: TabState) -> None:
    """Subscribe once to ``page``'s events; later calls for the same page do nothing."""
    if page in _logs:
        return
    log = _PageLog()
    _logs[page] = log

    def on_console(message: ConsoleMessage) -> None:
        entry: dict[str, Any] = {"type": _clip(message.type), "text": _clip(message.text), "timestamp": now_iso()}
        location = message.location
        if location and location.get("url"):
            entry["location"] = {**location, "url": _clip(str(location["url"]))}
        state.console.append(entry)

    def on_page_error(error: PlaywrightError) -> None:
        entry: dict[str, Any] = {"message": _clip(error.message or str(error)), "timestamp": now_iso()}
        if error.name:
            entry["name"] = _clip(error.name)
        if error.stack:
            entry["stack"] = _clip(error.stack)
        state.errors.append(entry)

    def on_request(request: Request) -> None:
        log.next_request += 1
        entry: dict[str, Any] = {
            "id": f"r{log.next_request}",
            "method": request.method,
            "url": _clip(request.url),
            "resourceType": request.resource_type,
            "headers": redact_headers(request.headers),
            "timestamp": now_iso(),
        }
        state.requests.append(entry)
        log.requests[request] = entry
        while len(log.requests) > LOG_LIMIT:
            del log.requests[next(iter(log.requests))]

    def on_response(response: Response) -> None:
        log.responses.append(response)
        entry = log.requests.get(response.request)
        if entry is not None:
            entry["status"] = response.status
            entry["ok"] = response.ok

    def on_request_failed(request: Request) -> None:
        entry = log.requests.get(request)
        if entry is not None:
            entry["ok"] = False
            entry["failure"] = _clip(request.failure or "failed")

    def on_close(_: Page) -> None:
        state.dialogs_pending.clear()
        log.dialogs.clear()
        state.dialog_arm = None

    page.on("console", on_console)
    page.on("pageerror", on_page_error)
    page.on("request", on_request)
    page.on("response", on_response)
    page.on("requestfailed", on_request_failed)
    page.on("dialog", lambda dialog: _on_dialog(dialog, state, log))
    page.on("close", on_close)


async def _on_dialog(dialog: Dialog, state: TabState, log: _PageLog) -> None:
    log.next_dialog += 1
    record: dict[str, Any] = {
        "id": f"d{log.next_dialog}",
        "type": dialog.type,
        "message": _clip(dialog.message),
        "openedAt": now_iso(),
    }
    if dialog.type == "prompt":
        record["defaultValue"] = dialog.default_value
    arm = state.dialog_arm
    if arm is None:
        state.dialogs_pending.append(record)
        log.dialogs[record["id"]] = dialog
        return
    state.dialog_arm = None
    await _settle(dialog, record, state, accept=arm.accept, prompt_text=arm.prompt_text, closed_by="armed")


async def _settle(
    dialog: Dialog, record: dict[str, Any], state: TabState, *, accept: bool, prompt_text: str | None, closed_by: str
) -> dict[str, Any]:
    try:
        if accept:
            await dialog.accept(prompt_text) if prompt_text is not None else await dialog.accept()
        else:
            await dialog.dismiss()
    except PlaywrightError:
        closed_by = "remote"  # someone else (the page, a person) closed it first
    closed = {**record, "closedAt": now_iso(), "closedBy": closed_by, "accepted": accept}
    state.dialogs_recent.append(closed)
    return closed


async def answer_dialog(
    page: Page, state: TabState, *, accept: bool, prompt_text: str | None, dialog_id: str | None
) -> dict[str, Any] | None:
    """Answer a pending dialog (``dialog_id``, or the only one); arm the next one when none is pending."""
    log = _logs.get(page)
    pending = state.dialogs_pending
    if dialog_id is not None:
        record = next((item for item in pending if item["id"] == dialog_id), None)
        if record is None:
            raise ControlError(409, f"Dialog {dialog_id} is not pending.", "DIALOG_NOT_PENDING")
    elif len(pending) > 1:
        raise act_invalid("Several dialogs are pending; pass dialogId.")
    elif pending:
        record = pending[0]
    else:
        state.dialog_arm = DialogArm(accept=accept, prompt_text=prompt_text)
        return None
    pending.remove(record)
    dialog = log.dialogs.pop(record["id"], None) if log is not None else None
    if dialog is None:
        return None
    return await _settle(dialog, record, state, accept=accept, prompt_text=prompt_text, closed_by="agent")


async def _tab(call: ControlCall) -> tuple[Page, TabState, dict[str, Any]]:
    page = await call.engine.page(call.target_id)
    head = {"ok": True, "targetId": await call.engine.target_id_of(page), "url": page.url}
    return page, call.engine.state(page), head


@route("GET", "/console", mutating=False)
async def console_messages(call: ControlCall) -> dict[str, Any]:
    """Console messages of a tab (``level`` keeps that level and above)."""
    _, state, head = await _tab(call)
    level = call.text("level")
    entries = list(state.console)
    if level:
        floor = _CONSOLE_PRIORITY.get(level.lower(), 1)
        entries = [item for item in entries if _CONSOLE_PRIORITY.get(item["type"], 1) >= floor]
    if call.flag("clear"):
        state.console.clear()
    return {**head, "entries": entries, "messages": entries}


@route("GET", "/errors", mutating=False)
async def page_errors(call: ControlCall) -> dict[str, Any]:
    """Uncaught page errors of a tab."""
    _, state, head = await _tab(call)
    entries = list(state.errors)
    if call.flag("clear"):
        state.errors.clear()
    return {**head, "entries": entries, "errors": entries}


@route("GET", "/requests", mutating=False)
async def network_requests(call: ControlCall) -> dict[str, Any]:
    """Network requests of a tab (``filter``: a substring of the URL or resource type)."""
    _, state, head = await _tab(call)
    needle = (call.text("filter") or "").strip()
    entries = [dict(item) for item in state.requests]
    if needle:
        entries = [item for item in entries if needle in item["url"] or needle in item["resourceType"]]
    if call.flag("clear"):
        state.requests.clear()
        log = _logs.get(await call.engine.page(call.target_id))
        if log is not None:
            log.requests.clear()
    return {**head, "entries": entries, "requests": entries}


@route("POST", "/response/body", mutating=False)
async def response_body(call: ControlCall) -> dict[str, Any]:
    """The body of the last (or else the next) response whose URL matches a pattern."""
    pattern = call.text("url", required=True) or ""
    max_chars = int(call.number("maxChars", 200_000) or 200_000)
    if max_chars < 1:
        raise act_invalid("maxChars must be a positive integer")
    timeout_s = (call.number("timeoutMs", 20_000) or 20_000) / 1000
    page, _, head = await _tab(call)
    log = _logs.get(page)
    seen = [item for item in (log.responses if log else ()) if url_matches(pattern, item.url)]
    if seen:
        response = seen[-1]
    else:
        try:
            response = await page.wait_for_event(
                "response", predicate=lambda item: url_matches(pattern, item.url), timeout=timeout_s * 1000
            )
        except PlaywrightError as exc:
            raise operation_failed(
                f"No response matched {pattern!r} within {int(timeout_s * 1000)} ms; see GET /requests."
            ) from exc
    try:
        raw = await response.body()
    except PlaywrightError as exc:
        raise operation_failed(f"The body of {response.url} is no longer available: {exc.message}") from exc
    text = raw[: max_chars * 4].decode("utf-8", errors="replace")
    truncated = len(raw) > max_chars * 4 or len(text) > max_chars
    body = text[:max_chars]
    result = {"url": response.url, "status": response.status, "body": body, "truncated": truncated}
    headers = redact_headers(await response.all_headers())
    return {**head, **result, "response": {**result, "headers": headers}}


@route("GET", "/dialogs", mutating=False)
async def dialogs(call: ControlCall) -> dict[str, Any]:
    """Pending and recently closed dialogs of a tab."""
    _, state, head = await _tab(call)
    browser_state = state.browser_state()
    return {**head, **browser_state["dialogs"], "browserState": browser_state}


@route("POST", "/hooks/dialog", mutating=True)
async def dialog_hook(call: ControlCall) -> dict[str, Any]:
    """Answer the pending dialog, or arm the answer to the next one."""
    if call.arg("accept") is None:
        raise act_invalid("accept is required")
    accept = call.flag("accept")
    prompt = call.arg("promptText")
    if prompt is not None and not isinstance(prompt, str):
        raise act_invalid("promptText must be a string")
    page, state, head = await _tab(call)
    closed = await answer_dialog(page, state, accept=accept, prompt_text=prompt, dialog_id=call.text("dialogId"))
    # Let the page run on after the dialog closed so the answer is visible to the next call.
    with contextlib.suppress(PlaywrightError, asyncio.TimeoutError):
        if closed is not None:
            await asyncio.wait_for(page.evaluate("0"), 5)
    return {**head, "armed": closed is None, **({"dialog": closed} if closed else {})}
