"""One turn of a run, bounded by TASK_TIMEOUT and cut short when a process of the slot dies (spec §6, §10.8).

Either way the turn ends with a :class:`TurnOutcome`: the engine's own, a timeout keeping what could be
salvaged (spec §13.8), or a fatal error naming the process that died.
"""

from __future__ import annotations

import asyncio
import json
from typing import TYPE_CHECKING

from openbrowse.domain.end_reasons import EndReason
from openbrowse.domain.failures import Failure, FailureKind
from openbrowse.domain.feed import FeedEntry, MessageType
from openbrowse.domain.ids import SessionId
from openbrowse.domain.runs import TurnEnding, TurnOutcome
from openbrowse.errors import OpenBrowseError, ResourceLimitExceeded

if TYPE_CHECKING:
    from openbrowse.sessions.runtime import Engine, WorkerRuntime


async def bounded_turn(runtime: WorkerRuntime, session_id: SessionId, engine: Engine, task: str) -> TurnOutcome:
    """Run one dispatch of ``task``; its children never outlive this call, even when it is cancelled."""
    limit = runtime.settings.TASK_TIMEOUT or None
    turn = asyncio.create_task(engine.run_turn(task), name=f"turn-{session_id}")
    died = asyncio.ensure_future(engine.wait_died())
    try:
        done, _ = await asyncio.wait({turn, died}, timeout=limit, return_when=asyncio.FIRST_COMPLETED)
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
