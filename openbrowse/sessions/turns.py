"""One turn of a run, bounded by TASK_TIMEOUT and cut short when a process of the slot dies (spec §6, §10.8).

Either way the turn ends with a :class:`TurnOutcome`: the engine's own, a timeout keeping what could be
salvaged (spec §13.8), or a fatal error naming the process that died.
"""

from __future__ import annotations

import asyncio
import json
from typing import TYPE_CHECKING, Any, Protocol

from openbrowse.domain.end_reasons import EndReason
from openbrowse.domain.failures import Failure, FailureKind
from openbrowse.domain.feed import FeedEntry, MessageType
from openbrowse.domain.ids import SessionId
from openbrowse.domain.runs import TurnEnding, TurnOutcome
from openbrowse.errors import OpenBrowseError, ResourceLimitExceeded

if TYPE_CHECKING:
    from openbrowse.sessions.runtime import Engine, WorkerRuntime


class PausedTime(Protocol):
    """The session's pauses, which stop the task clock (spec §21.5)."""

    @property
    def active(self) -> bool: ...

    @property
    def changed(self) -> asyncio.Event: ...

    def paused_seconds(self) -> float: ...


async def bounded_turn(
    runtime: WorkerRuntime, session_id: SessionId, engine: Engine, task: str, *, paused: PausedTime | None = None
) -> TurnOutcome:
    """Run one dispatch of ``task``; its children never outlive this call, even when it is cancelled."""
    limit = runtime.settings.TASK_TIMEOUT or None
    turn = asyncio.create_task(engine.run_turn(task), name=f"turn-{session_id}")
    died = asyncio.ensure_future(engine.wait_died())
    try:
        done = await _first_of(turn, died, limit, paused)
    finally:
        for child in (turn, died):
            if not child.done():
                child.cancel()
        await asyncio.shield(asyncio.wait({turn, died}))
    if turn in done and not turn.cancelled():
        return turn.result()
    if died in done and not died.cancelled():
        return await _slot_died(runtime, session_id, died.result())
    return await _timed_out(runtime, session_id, engine)


async def _first_of(
    turn: asyncio.Future[Any], died: asyncio.Future[Any], limit: float | None, paused: PausedTime | None
) -> set[asyncio.Future[Any]]:
    """Whichever of ``turn`` and ``died`` ends first, or nothing once ``limit`` seconds of unpaused time passed."""
    waiting: set[asyncio.Future[Any]] = {turn, died}
    if paused is None or limit is None:
        done, _ = await asyncio.wait(waiting, timeout=limit, return_when=asyncio.FIRST_COMPLETED)
        return done
    loop = asyncio.get_running_loop()
    started, paused_before = loop.time(), paused.paused_seconds()
    while True:
        remaining = limit - (loop.time() - started - (paused.paused_seconds() - paused_before))
        if remaining <= 0 and not paused.active:
            return set()
        paused.changed.clear()
        changed = asyncio.ensure_future(paused.changed.wait())
        try:
            done, _ = await asyncio.wait(
                {*waiting, changed},
                timeout=None if paused.active else remaining,
                return_when=asyncio.FIRST_COMPLETED,
            )
        finally:
            changed.cancel()
        if done & waiting:
            return done & waiting


async def _timed_out(runtime: WorkerRuntime, session_id: SessionId, engine: Engine) -> TurnOutcome:
    salvage = await engine.salvage()
    summary = f"Timed out after {runtime.settings.TASK_TIMEOUT} s. {salvage.kept}"
    await runtime.feed.append(
        session_id, FeedEntry(MessageType.COMPLETION, summary, {"output": clip_output(salvage.output)})
    )
    return TurnOutcome(
        ending=TurnEnding.TIMEOUT,
        summary=summary,
        output=salvage.output,
        is_task_successful=salvage.is_task_successful,
        failure=Failure(FailureKind.SESSION_TIMEOUT),
    )


async def _slot_died(runtime: WorkerRuntime, session_id: SessionId, exc: BaseException) -> TurnOutcome:
    message = str(exc) if isinstance(exc, OpenBrowseError) else f"The browser stack failed: {exc}"
    await runtime.feed.append(
        session_id,
        FeedEntry(MessageType.BROWSER_ACTION_ERROR, f"Fatal error: {message}"[:220], {"errorFull": message}),
    )
    return TurnOutcome(
        ending=TurnEnding.ERROR,
        summary=f"Fatal error: {message}",
        is_task_successful=False,
        failure=Failure(
            FailureKind.RESOURCE_LIMIT if isinstance(exc, ResourceLimitExceeded) else FailureKind.AGENT_FAILURE,
            message=message,
        ),
        release_browser=True,
        end_reason=death_end_reason(exc),
    )


def death_end_reason(exc: BaseException) -> EndReason:
    """A memory cap hit twice is its own reason (spec §24.5); any other death of the slot is a lost runner."""
    if isinstance(exc, ResourceLimitExceeded):
        return EndReason.MEMORY_LIMIT if exc.limit == "memory" else EndReason.ERROR
    return EndReason.RUNNER_LOST


def clip_output(output: object) -> str:
    """A turn's output as the ``completion`` row's ``data.output`` carries it (JSON text, ≤4000 chars)."""
    if output is None:
        return ""
    text = output if isinstance(output, str) else json.dumps(output, ensure_ascii=False)
    return text[:4000]
