"""Stops keep the last answer, shutdown keeps parked sessions idle, follow-ups are never lost (spec §4.5, §6, §8)."""

from __future__ import annotations

import asyncio

from openbrowse.domain.ids import SessionId
from openbrowse.domain.sessions import SessionStatus, StopStrategy
from openbrowse.sessions.requests import SessionCreate
from tests.integration.sessions.conftest import Harness, HarnessFactory
from tests.integration.sessions.harness import Script, orphans, wait_for_status

S = SessionStatus
RESTING = {S.IDLE, S.STOPPED, S.TIMED_OUT, S.ERROR}


def task(text: str, **fields: object) -> SessionCreate:
    sent = frozenset({"task", *fields})
    return SessionCreate(task=text, sent_fields=sent, **fields)  # type: ignore[arg-type]


async def parked_session(harness: Harness, **fields: object) -> SessionId:
    record = await harness.manager.create(task("What does it cost?", keep_alive=True, **fields))
    parked = await wait_for_status(harness.manager, record.id, {S.IDLE, S.ERROR, S.STOPPED})
    assert parked.status is S.IDLE and parked.browser_live and parked.output == "42.00 EUR"
    worker = harness.manager.worker(record.id)
    assert worker is not None
    for _ in range(1000):  # the worker parks a few loop turns after the status; under load, turns take longer
        if worker.phase == "parked":
            break
        await asyncio.sleep(0.005)
    assert worker.phase == "parked"
    return record.id


async def test_stopping_a_parked_session_keeps_its_answer(harness: Harness) -> None:
    sid = await parked_session(harness)
    stopped = await harness.manager.stop(sid, StopStrategy.SESSION)
    assert stopped.status is S.STOPPED
    assert stopped.output == "42.00 EUR" and stopped.is_task_successful is True
    assert stopped.last_step_summary == "Done: 42.00 EUR"
    assert not stopped.browser_live and stopped.live_url is None
    notes = [m.summary for m in await harness.manager.feed.all(sid)]
    assert "Keep-alive browser released: stopped by request" in notes[-1], notes
    assert not any(n.startswith("Stopped by request.") for n in notes)


async def test_stop_task_of_a_parked_session_keeps_its_answer_and_goes_cold_idle(harness: Harness) -> None:
    sid = await parked_session(harness)
    stopped = await harness.manager.stop(sid, StopStrategy.TASK)
    assert stopped.status is S.IDLE and not stopped.browser_live
    assert stopped.output == "42.00 EUR" and stopped.is_task_successful is True


async def test_shutdown_leaves_a_parked_session_cold_idle(harness_factory: HarnessFactory) -> None:
    harness = await harness_factory()
    sid = await parked_session(harness)
    await harness.manager.aclose()
    record = await harness.manager.get(sid)
    assert record.status is S.IDLE and not record.browser_live and record.live_url is None
    assert record.output == "42.00 EUR" and record.is_task_successful is True


async def test_a_follow_up_racing_a_browser_crash_is_never_left_running(harness: Harness) -> None:
    """The browser dies while the follow-up is being handed over: the session must not stay running workerless."""
    sid = await parked_session(harness, profile_id="shop")
    harness.profiles.on_lookup = harness.engines.by_session[sid].die
    accepted = await harness.manager.follow_up(sid, task("And the red one?", profile_id="shop"))
    assert accepted.status in {S.RUNNING, S.CREATED}
    final = await wait_for_status(harness.manager, sid, RESTING)
    assert await orphans(harness.manager) == []
    assert final.status in RESTING


async def test_a_follow_up_racing_an_eviction_runs_cold(harness: Harness) -> None:
    """The slot is being taken from the parked worker as the follow-up arrives: it is queued, not refused."""
    sid = await parked_session(harness, profile_id="shop")
    harness.engines.scripts[sid] = Script(outputs=["The red one is 9.00 EUR"])
    lease = harness.pool.leases[sid]
    evictions: list[asyncio.Task[None]] = []
    harness.profiles.on_lookup = lambda: evictions.append(lease.begin_eviction())
    accepted = await harness.manager.follow_up(sid, task("And the red one?", profile_id="shop"))
    assert accepted.status in {S.RUNNING, S.CREATED}
    final = await wait_for_status(harness.manager, sid, RESTING)
    assert final.status is S.IDLE and final.output == "The red one is 9.00 EUR"
    assert await orphans(harness.manager) == []
    await asyncio.gather(*evictions)


async def test_concurrent_creates_draw_distinct_queue_places(harness_factory: HarnessFactory) -> None:
    harness = await harness_factory(capacity=1)
    records = await asyncio.gather(*(harness.manager.create(task(f"job {n}")) for n in range(6)))
    seqs = [(await harness.manager.get(r.id)).queue_seq for r in records]
    assert len(set(seqs)) == len(seqs), seqs
    for record in records:
        await wait_for_status(harness.manager, record.id, RESTING)


async def test_session_locks_are_pruned(harness: Harness) -> None:
    records = [await harness.manager.create(task(f"job {n}")) for n in range(5)]
    for record in records:
        await wait_for_status(harness.manager, record.id, RESTING)
    await harness.manager.delete(records[0].id)
    for record in records[1:]:
        await harness.manager.stop(record.id, StopStrategy.TASK)
    assert harness.manager.held_locks() == 0
