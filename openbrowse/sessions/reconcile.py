"""Runs whose process is gone: this node's own after it restarts, and a dead node's once a survivor adopted them
(spec §7.4, §26.5). Both end the same way:

* a run that was ``running`` ends ``error`` with ``endReason: runner_lost`` and a ``system`` feed event saying why;
* a parked keep-alive session stays ``idle`` without a browser (its next follow-up replays cold);
* a task that was queued and never started goes back to the queue, here, keeping its place (``queue_seq``).

Webhooks go out as for any status change: the writes go through the same repo hooks.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, Protocol

from openbrowse.domain.feed import FeedEntry
from openbrowse.domain.ids import SessionId
from openbrowse.domain.sessions import SessionRecord, SessionStatus
from openbrowse.errors import SessionNotFound
from openbrowse.sessions.recordings import finalize_leftovers
from openbrowse.sessions.states import Trigger

if TYPE_CHECKING:
    from pathlib import Path

    from openbrowse.store.feed import FeedRepo
    from openbrowse.store.sessions import SessionRepo


class SessionManager(Protocol):
    """What reconciling needs of the sessions manager (which calls in here, so it is not imported)."""

    @property
    def sessions(self) -> SessionRepo: ...

    @property
    def feed(self) -> FeedRepo: ...

    async def apply(self, session_id: SessionId, trigger: Trigger, **changes: Any) -> SessionRecord: ...

    def hold_secrets(self, record: SessionRecord) -> None: ...


RESTART_NOTE = "Interrupted by server restart"


async def reconcile_after_restart(manager: SessionManager, spawn: Callable[[SessionId], None], files: Path) -> None:
    """At start-up: this node's runs that its previous process left behind."""
    sessions = manager.sessions
    for record in await sessions.with_secrets():
        manager.hold_secrets(record)
    await _end_lost(manager, await sessions.with_status(SessionStatus.RUNNING), RESTART_NOTE, files)
    await _go_cold(manager, await sessions.with_status(SessionStatus.IDLE))
    await _requeue(manager, await sessions.queued(), spawn, "Re-queued after a server restart; the run had not started")


async def adopt_from_dead_node(
    manager: SessionManager,
    spawn: Callable[[SessionId], None],
    files: Path,
    node_id: str,
    session_ids: Iterable[str],
) -> None:
    """A survivor's part once it adopted ``node_id``'s sessions (its rows now name this node)."""
    records: list[SessionRecord] = []
    for session_id in session_ids:
        try:
            record = await manager.sessions.get(session_id)
        except SessionNotFound:
            continue
        manager.hold_secrets(record)
        records.append(record)
    note = f"The node {node_id} that ran it stopped answering (no heartbeat); the run was lost"
    await _end_lost(manager, [r for r in records if r.status is SessionStatus.RUNNING], note, files)
    await _go_cold(manager, [r for r in records if r.status is SessionStatus.IDLE])
    waiting = sorted(
        (r for r in records if r.is_queued and r.status is SessionStatus.CREATED), key=lambda r: r.queue_seq or 0
    )
    await _requeue(manager, waiting, spawn, f"Re-queued on this node: the node {node_id} it waited on is gone")


async def _end_lost(manager: SessionManager, records: list[SessionRecord], note: str, files: Path) -> None:
    for record in records:
        await manager.apply(
            record.id,
            Trigger.RESTART_INTERRUPT,
            last_step_summary=note,
            failure_kind=None,
            failure_status_code=None,
            live_url=None,
            browser_live=False,
        )
        await manager.feed.append(record.id, FeedEntry.system("restart", note))
        await asyncio.to_thread(finalize_leftovers, files / record.id)  # a recording cut short by it


async def _go_cold(manager: SessionManager, records: list[SessionRecord]) -> None:
    for record in records:
        if record.browser_live:
            await manager.apply(record.id, Trigger.GO_COLD, live_url=None, browser_live=False)


async def _requeue(
    manager: SessionManager, records: list[SessionRecord], spawn: Callable[[SessionId], None], note: str
) -> None:
    for record in records:
        await manager.apply(record.id, Trigger.RESTART_REQUEUE)
        await manager.feed.append(record.id, FeedEntry.system("restart", note))
        spawn(record.id)
