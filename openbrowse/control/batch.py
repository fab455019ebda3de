"""``kind: "batch"``: several ``/act`` actions in one call, on one tab (spec §20.2).

The batch was checked whole before it starts (kinds, fields, refs, nested ``targetId``). Each entry yields
``{ok:true}`` or ``{ok:false, error}``; with ``stopOnError`` (the default) the list ends at the first failure. A
committed main-frame navigation or the tab closing ends the batch: the refs of the remaining actions belong to a
document that is gone, so they are skipped and ``aborted`` says where and why.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from playwright.async_api import Error as PlaywrightError, Page

from openbrowse.control.act_perform import NavigationSettle, failure_message, perform
from openbrowse.control.act_request import iter_actions
from openbrowse.control.errors import ControlError

if TYPE_CHECKING:
    from openbrowse.control.engine import ControlEngine

__all__ = ["TimeoutOf", "check_batch_targets", "run_batch"]

TimeoutOf = Callable[[dict[str, Any]], int]
"""An action's timeout in ms."""


def _target_mismatch() -> ControlError:
    return ControlError(
        403, "A batched action names another tab; a batch runs on one tab only.", "ACT_TARGET_ID_MISMATCH"
    )


async def check_batch_targets(engine: ControlEngine, page: Page, batch: dict[str, Any]) -> None:
    """Refuse a batch whose nested ``targetId`` names a tab other than ``page`` (before any action runs)."""
    for nested in iter_actions(batch):
        if nested is batch or nested.get("targetId") in (None, ""):
            continue
        if not isinstance(nested["targetId"], str):
            raise _target_mismatch()
        try:
            named = await engine.page(nested["targetId"])
        except ControlError as exc:
            raise _target_mismatch() from exc
        if named is not page:
            raise _target_mismatch()


async def run_batch(
    engine: ControlEngine, page: Page, batch: dict[str, Any], timeout_of: TimeoutOf, depth: int = 0
) -> dict[str, Any]:
    """Run ``batch['actions']`` in order; ``timeout_of(action)`` gives each action's timeout in ms."""
    state = engine.state(page)
    actions: list[dict[str, Any]] = batch["actions"]
    stop_on_error = batch.get("stopOnError") is not False
    results: list[dict[str, Any]] = []
    document = state.document

    def aborted(reason: str, after: int) -> dict[str, Any]:
        skipped = len(actions) - after
        if skipped == 0:
            return {"results": results}
        url = "" if page.is_closed() else page.url
        if reason == "navigation" and results:
            results[-1] = {**results[-1], "navigated": True, "url": url}
        return {"results": results, "aborted": {"reason": reason, "afterAction": after, "url": url, "skipped": skipped}}

    for index, action in enumerate(actions):
        if page.is_closed():
            return aborted("closed", index)
        if state.document != document:
            return aborted("navigation", index)
        result = await _run_one(engine, page, action, timeout_of, depth)
        results.append(result)
        if page.is_closed():
            return aborted("closed", index + 1)
        if state.document != document:
            return aborted("navigation", index + 1)
        if not result["ok"] and stop_on_error:
            break
    return {"results": results}


async def _run_one(
    engine: ControlEngine, page: Page, action: dict[str, Any], timeout_of: TimeoutOf, depth: int
) -> dict[str, Any]:
    try:
        if action["kind"] == "batch":
            inner = await run_batch(engine, page, action, timeout_of, depth + 1)
            failed = next((entry for entry in inner["results"] if not entry["ok"]), None)
            outcome: dict[str, Any] = {"ok": failed is None, **inner}
            if failed is not None:
                outcome["error"] = failed["error"]
            return outcome
        async with NavigationSettle(page):
            value = await perform(engine, page, action, timeout_of(action))
    except ControlError as exc:
        if exc.code == "ACT_TARGET_ID_MISMATCH":
            raise
        return {"ok": False, "error": exc.message}
    except PlaywrightError as exc:
        return {"ok": False, "error": failure_message(exc)}
    if action["kind"] == "evaluate" and value is not None:
        return {"ok": True, "result": value}
    return {"ok": True}
