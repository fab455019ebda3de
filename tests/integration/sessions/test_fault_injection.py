"""Stops, deletes, stop-tasks, browser deaths, evictions and shutdowns land at every await of a run's life.

A seeded random schedule drives a real SessionManager over real SQLite (scripted engines in place of the
browser, see ``harness.py``). Each round starts a few runs (some keep-alive, some with a warm or cold follow-up)
and fires one fault per run after a random number of event-loop turns drawn across the whole life of a run,
measured first. After every round: no session is running or queued without a worker, nothing holds a slot or a
browser that should not, every answer a stop must keep is kept, and the store still accepts writes. Some rounds
shut the manager down mid-run and start a new one on the same database, as a restart would. At the end a new
run completes.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
from dataclasses import dataclass
from pathlib import Path

from openbrowse.config import Settings
from openbrowse.domain.feed import FeedEntry
from openbrowse.domain.ids import SessionId
from openbrowse.domain.sessions import SessionStatus, StopStrategy
from openbrowse.errors import InvalidRequest, SessionNotFound
from openbrowse.sessions.manager import SessionManager
from openbrowse.sessions.requests import SessionCreate
from openbrowse.sessions.runtime import WorkerRuntime
from openbrowse.store.db import Database
from openbrowse.store.feed import FeedRepo
from openbrowse.store.sessions import SessionRepo
from tests.integration.sessions.conftest import HookedProfiles
from tests.integration.sessions.harness import AnyRunStarts, Engines, FakePool, Script, orphans, settle

S = SessionStatus
SEED = 20261130
ROUNDS = 300
RUNS_PER_ROUND = 3
RESTART_EVERY = 15
FAULTS = ("stop_session", "stop_task", "delete", "die", "evict", "follow_up", "none")


def task(text: str, **fields: object) -> SessionCreate:
    return SessionCreate(task=text, sent_fields=frozenset({"task", *fields}), **fields)  # type: ignore[arg-type]


@dataclass
class Stack:
    settings: Settings
    db: Database
    pool: FakePool
    engines: Engines
    manager: SessionManager


async def open_stack(settings: Settings, db: Database, engines: Engines) -> Stack:
    sessions, feed = SessionRepo(db), FeedRepo(db)
    pool = FakePool(capacity=2)
    runtime = WorkerRuntime(
        settings, sessions, feed, pool, make_engine=engines.make, policy=AnyRunStarts(),
    )  # fmt: skip
    manager = SessionManager(settings, sessions, feed, HookedProfiles(db), runtime)
    await manager.__aenter__()
    return Stack(settings, db, pool, engines, manager)


async def loop_turns(turns: int) -> None:
    for _ in range(turns):
        await asyncio.sleep(0)


async def lifetime_in_loop_turns(manager: SessionManager) -> int:
    """How many event-loop turns one keep-alive run takes from create to parked, with a warm follow-up."""
    record = await manager.create(task("calibrate", keep_alive=True))
    turns = 0
    while (await manager.get(record.id)).status is not S.IDLE or _phase(manager, record.id) != "parked":
        await asyncio.sleep(0)
        turns += 1
    await manager.follow_up(record.id, task("again"))
    while (await manager.get(record.id)).status is not S.IDLE or _phase(manager, record.id) != "parked":
        await asyncio.sleep(0)
        turns += 1
    await manager.stop(record.id, StopStrategy.SESSION)
    return turns


def _phase(manager: SessionManager, session_id: SessionId) -> str | None:
    worker = manager.worker(session_id)
    return worker.phase if worker is not None else None


async def fire(stack: Stack, session_id: SessionId, fault: str, rng: random.Random) -> None:
    manager = stack.manager
    with contextlib.suppress(SessionNotFound, InvalidRequest):
        if fault == "stop_session":
            await manager.stop(session_id, StopStrategy.SESSION)
        elif fault == "stop_task":
            await manager.stop(session_id, StopStrategy.TASK)
        elif fault == "delete":
            await manager.delete(session_id)
        elif fault == "die":
            engine = stack.engines.by_session.get(session_id)
            if engine is not None:
                engine.die()
        elif fault == "evict":
            stack.pool.evict(session_id)
        elif fault == "follow_up":
            await manager.follow_up(session_id, task(f"follow-up {rng.random():.3f}"))


async def start_run(stack: Stack, n: int, rng: random.Random) -> SessionId:
    record = await stack.manager.create(task(f"run {n}", keep_alive=rng.random() < 0.6))
    stack.engines.scripts[record.id] = Script(outputs=[f"answer {n}", f"answer {n} again"])
    return record.id


async def one_run(stack: Stack, n: int, lifetime: int, rng: random.Random) -> SessionId:
    session_id = await start_run(stack, n, rng)
    await loop_turns(rng.randint(0, lifetime))
    await fire(stack, session_id, rng.choice(FAULTS), rng)
    if rng.random() < 0.3:  # a second fault, e.g. a delete landing in a stop's teardown
        await loop_turns(rng.randint(0, lifetime // 3))
        await fire(stack, session_id, rng.choice(FAULTS), rng)
    return session_id


async def check_round(stack: Stack, ids: list[SessionId]) -> None:
    manager = stack.manager
    await settle(manager)
    assert await orphans(manager) == [], "a session says running or queued but no worker exists for it"
    for worker in manager.workers():  # parked: stopping must keep the last turn's answer
        parked = await manager.get(worker.session_id)
        assert parked.status is S.IDLE and parked.output is not None and parked.output.startswith("answer")
        stopped = await manager.stop(worker.session_id, StopStrategy.SESSION)
        assert stopped.status is S.STOPPED and stopped.output == parked.output, "a stop erased the answer"
        assert stopped.is_task_successful is True
    await settle(manager)
    assert manager.workers() == []
    assert stack.pool.leases == {}, "a slot is still held"
    assert stack.engines.live == set(), "a browser was left open"
    for session_id in ids:
        record = await manager.sessions.find(session_id)
        if record is not None:
            assert record.status in {S.IDLE, S.STOPPED, S.ERROR, S.TIMED_OUT}, record
            assert not record.browser_live and record.live_url is None, record
            await manager.feed.append(session_id, FeedEntry.system("probe", "the store still accepts writes"))


async def test_faults_at_every_await_leave_a_working_service(tmp_path: Path) -> None:
    rng = random.Random(SEED)
    settings = Settings(OPENBROWSE_HOME=tmp_path)
    engines = Engines()
    async with Database(settings.db_path) as db:
        stack = await open_stack(settings, db, engines)
        lifetime = await lifetime_in_loop_turns(stack.manager)
        assert lifetime > 10, "the harness must give a run many await points"
        for round_no in range(ROUNDS):
            first = round_no * RUNS_PER_ROUND
            if round_no % RESTART_EVERY == RESTART_EVERY - 1:
                # SIGTERM mid-round: requests finish, the server shuts down with runs in flight, then restarts
                ids = [await start_run(stack, first + k, rng) for k in range(RUNS_PER_ROUND)]
                await loop_turns(rng.randint(0, lifetime))
                await stack.manager.aclose()
                assert stack.manager.workers() == [] and stack.pool.leases == {} and engines.live == set()
                stack = await open_stack(settings, db, engines)
            else:
                runs = [one_run(stack, first + k, lifetime, rng) for k in range(RUNS_PER_ROUND)]
                ids = list(await asyncio.gather(*runs))
            if ids:
                await check_round(stack, ids)
        final = await stack.manager.create(task("a new run after all that"))
        for _ in range(2000):
            record = await stack.manager.get(final.id)
            if record.status is S.STOPPED:
                break
            await asyncio.sleep(0.005)
        assert record.status is S.STOPPED and record.is_task_successful is True and record.output == "42.00 EUR"
        await stack.manager.aclose()
        assert engines.live == set() and stack.pool.leases == {}
