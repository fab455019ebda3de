"""What a tab did, as the control API reports it: console, page errors, requests, responses and dialogs (spec §20.2).

The routes below read back the logs that :func:`openbrowse.control.page_log.watch` fills for every page the engine
sees. Dialogs are held open: a pending one blocks the tab until ``POST /hooks/dialog`` answers it, or an armed
answer takes the next one.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
from typing import Any

from playwright.async_api import Error as PlaywrightError, Page

from openbrowse.control.call import ControlCall, route
from openbrowse.control.errors import act_invalid, operation_failed
from openbrowse.control.page_log import answer_dialog, page_log, redact_headers
from openbrowse.control.tab_state import TabState

__all__ = ["url_matches"]

_CONSOLE_PRIORITY = {"debug": 0, "log": 1, "info": 1, "warn": 2, "warning": 2, "error": 3}


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
        log = page_log(await call.engine.page(call.target_id))
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
    log = page_log(page)
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
