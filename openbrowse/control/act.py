"""``POST /act``: one action, or a batch of them, on a tab (spec §20.2, §20.4).

Order of work: the body is checked whole (:mod:`openbrowse.control.act_request`), a batch's nested ``targetId``
values are checked against the tab, every ref is checked against the tab's last snapshot — only then does
anything run. While it runs, a dialog that opens and stays open (see :mod:`openbrowse.control.observe`) ends
the call with ``{blockedByDialog, browserState}``: the page is frozen until someone answers the dialog.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable
from typing import TYPE_CHECKING, Any, TypeVar

from playwright.async_api import Dialog, Error as PlaywrightError, Page

from openbrowse.control.act_perform import ACT_TIMEOUT_CAP_MS, NavigationSettle, failure_message, perform
from openbrowse.control.act_request import refs_of, validate_action
from openbrowse.control.batch import check_batch_targets, run_batch
from openbrowse.control.call import ControlCall, route
from openbrowse.control.errors import ControlError, operation_failed
from openbrowse.control.tab_state import TabState

if TYPE_CHECKING:
    from openbrowse.control.engine import ControlEngine

__all__ = ["ACT_TIMEOUT_MS", "WAIT_TIMEOUT_MS", "act", "action_timeout"]

ACT_TIMEOUT_MS = 8_000
WAIT_TIMEOUT_MS = 20_000
T = TypeVar("T")


class _BlockedByDialog(Exception):
    """A dialog opened during the action and nobody has answered it."""


def action_timeout(action: dict[str, Any], fallback: float | None = None) -> int:
    """The action's ``timeoutMs`` (else the request's, else the kind's default), capped."""
    value = action.get("timeoutMs")
    if value is None or value <= 0:
        value = fallback
    if value is None or value <= 0:
        value = WAIT_TIMEOUT_MS if action.get("kind") in {"wait", "evaluate"} else ACT_TIMEOUT_MS
    return int(min(float(value), ACT_TIMEOUT_CAP_MS))


@route("POST", "/act", mutating=True)
async def act_route(call: ControlCall) -> dict[str, Any]:
    """Click, type, press, fill, wait, evaluate… on a tab by snapshot ref; or a batch of them."""
    return await act(call.engine, dict(call.body), call.target_id)


async def act(engine: ControlEngine, body: dict[str, Any], target_id: str | None = None) -> dict[str, Any]:
    action = validate_action(body, evaluate_enabled=engine.target.evaluate_enabled)
    page = await engine.page(target_id)
    if action["kind"] == "batch":
        await check_batch_targets(engine, page, action)
    for ref in refs_of(action):
        engine.ref_target(page, ref)  # REF_STALE before anything runs
    state = engine.state(page)
    head: dict[str, Any] = {"ok": True, "targetId": await engine.target_id_of(page)}
    if state.blocked() is not None:
        return _blocked(head, page, state)
    request_timeout = action.get("timeoutMs")
    try:
        if action["kind"] == "batch":
            outcome = await _watching_dialogs(
                page, state, run_batch(engine, page, action, lambda a: action_timeout(a, request_timeout))
            )
            return {**head, **_url(page), **outcome}
        result = await _watching_dialogs(page, state, _single(engine, page, action, action_timeout(action)))
    except _BlockedByDialog:
        return _blocked(head, page, state)
    except PlaywrightError as exc:
        raise operation_failed(failure_message(exc)) from exc
    body_out = {**head, **_url(page)}
    if action["kind"] in {"evaluate", "select"}:
        body_out["result"] = result
    return body_out


async def _single(engine: ControlEngine, page: Page, action: dict[str, Any], wait_ms: int) -> Any:
    async with NavigationSettle(page):
        return await perform(engine, page, action, wait_ms)


def _url(page: Page) -> dict[str, Any]:
    return {} if page.is_closed() else {"url": page.url}


def _blocked(head: dict[str, Any], page: Page, state: TabState) -> dict[str, Any]:
    return {**head, **_url(page), "blockedByDialog": True, "browserState": state.browser_state()}


async def _watching_dialogs(page: Page, state: TabState, work: Awaitable[T]) -> T:
    """``work``'s result, unless a dialog opens and stays pending first (then :class:`_BlockedByDialog`).

    A dialog answered at once by an armed ``/hooks/dialog`` does not block: the action goes on.
    """
    loop = asyncio.get_running_loop()
    opened: asyncio.Future[None] = loop.create_future()

    def on_dialog(_dialog: Dialog) -> None:
        if not opened.done():
            opened.set_result(None)

    task = asyncio.ensure_future(work)
    page.on("dialog", on_dialog)
    try:
        while True:
            waiting: list[asyncio.Future[Any]] = [task, opened]
            await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
            if task.done():
                return task.result()
            # The observer recorded the dialog before this wake-up (its handler was registered first).
            if state.dialogs_pending:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError, PlaywrightError, ControlError):
                    await task
                raise _BlockedByDialog
            opened = loop.create_future()
    finally:
        page.remove_listener("dialog", on_dialog)
        if not task.done():
            task.cancel()
