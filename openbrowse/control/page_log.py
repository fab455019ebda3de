"""The page watcher: what a tab did (console, page errors, requests, responses, dialogs), logged as it happens.

:func:`watch` subscribes to one page's events once (the control engine and the MCP browser call it for every page
they see) and fills the page's :class:`~openbrowse.control.tab_state.TabState`; :func:`page_log` holds the live
Playwright objects the control routes (:mod:`openbrowse.control.observe`) read back. Dialogs are held open: a pending
one blocks the tab until :func:`answer_dialog` answers it, or an armed answer takes the next one.
"""

from __future__ import annotations

import re
import weakref
from collections import deque
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from playwright.async_api import ConsoleMessage, Dialog, Error as PlaywrightError, Page, Request, Response

from openbrowse.control.errors import ControlError, act_invalid
from openbrowse.control.tab_state import LOG_LIMIT, DialogArm, TabState

__all__ = ["REDACTED", "PageLog", "answer_dialog", "is_secret_header", "now_iso", "page_log", "redact_headers", "watch"]

TEXT_LIMIT = 2048  # per observed string: a page must not fill our memory through one console line
RESPONSES_KEPT = 100
REDACTED = "[redacted]"
_SECRET_HEADERS = {"authorization", "proxy-authorization", "cookie", "set-cookie", "api-key", "apikey", "api_key"}
_SECRET_PARTS = {"key", "apikey", "token", "secret", "password", "passwd", "auth", "signature", "session", "csrf"}


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


@dataclass(slots=True)
class PageLog:
    """What the routes need beyond TabState: live Playwright objects that cannot go into the state's plain lists."""

    dialogs: dict[str, Dialog] = field(default_factory=dict)
    next_dialog: int = 0
    next_request: int = 0
    requests: dict[Request, dict[str, Any]] = field(default_factory=dict)
    responses: deque[Response] = field(default_factory=lambda: deque(maxlen=RESPONSES_KEPT))


_LOGS: weakref.WeakKeyDictionary[Page, PageLog] = weakref.WeakKeyDictionary()


def watch(page: Page, state: TabState) -> None:
    """Subscribe once to ``page``'s events; later calls for the same page do nothing."""
    if page in _LOGS:
        return
    log = PageLog()
    _LOGS[page] = log

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


async def _on_dialog(dialog: Dialog, state: TabState, log: PageLog) -> None:
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
    log = _LOGS.get(page)
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


def page_log(page: Page) -> PageLog | None:
    """The live log of a watched page, or None for a page :func:`watch` never saw."""
    return _LOGS.get(page)
