"""HostedEngine on real SQLite and a real activity board: the engine works on its own thread and event loop,
reaches the API loop's repos, board and slot only through the bridges, and cancellation, errors and close carry
across (the engine is a probe; the real AgentEngine runs the same way in the e2e suite)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from openbrowse.domain.activity import ActivityKind, ActivityReporter
from openbrowse.domain.clock import utc_now
from openbrowse.domain.feed import FeedEntry
from openbrowse.domain.ids import new_session_id
from openbrowse.domain.runs import NOTHING_KEPT, Salvage, TurnEnding, TurnOutcome
from openbrowse.domain.sessions import SessionRecord, SessionStatus
from openbrowse.errors import ProcessDied
from openbrowse.sessions.activity import ActivityBoard
from openbrowse.sessions.engine_host import HomeActivity, HomeFeed, HomeLoop, HomeSessions, HostedEngine, engine_threads
from openbrowse.sessions.runtime import BrowserLease, FeedLog, SessionRows, SlotEndpoints
from openbrowse.store.db import Database
from openbrowse.store.feed import FeedRepo
from openbrowse.store.sessions import SessionRepo


class FakeSlot:
    """A slot of the API loop: ``watch`` waits on a future of that loop, as the real slot's ``died`` is."""

    cdp_url = "http://127.0.0.1:9"
    cdp_ws_url = "ws://127.0.0.1:9/devtools/browser/x"

    def __init__(self) -> None:
        self.died: asyncio.Future[ProcessDied] = asyncio.get_running_loop().create_future()

    async def watch(self) -> ProcessDied:
        return await self.died


class FakeLease:
    def __init__(self) -> None:
        self.slot = FakeSlot()
        self.started_on: int | None = None

    async def start_browser(self) -> FakeSlot:
        self.started_on = threading.get_ident()
        return self.slot


@dataclass
class ProbeEngine:
    """Records which thread did what; ``run_turn`` writes through every bridge."""

    record: SessionRecord
    sessions: SessionRows
    feed: FeedLog
    activity: ActivityReporter
    threads: dict[str, int] = field(default_factory=dict)
    entered: threading.Event = field(default_factory=threading.Event)
    slot: SlotEndpoints | None = None
    close_gate: threading.Event | None = None
    closing: threading.Event = field(default_factory=threading.Event)
    closed: bool = False

    async def launch(self, lease: BrowserLease, task: str) -> None:
        self.threads["launch"] = threading.get_ident()
        self.slot = await lease.start_browser()

    async def wait_died(self) -> BaseException:
        assert self.slot is not None
        return await self.slot.watch()

    async def run_turn(self, task: str) -> TurnOutcome:
        self.threads["turn"] = threading.get_ident()
        self.activity.begin("Working", ActivityKind.ACTIONS)
        await self.sessions.update(self.record.id, step_count=1, last_step_summary=task)
        await self.feed.append(self.record.id, FeedEntry.system("note", task))
        if task == "die":
            raise ProcessDied("Chromium", -9)
        if task == "block":
            try:
                self.entered.set()
                await asyncio.sleep(3600)
            finally:
                await self.feed.append(self.record.id, FeedEntry.system("note", "cleaned up"))
        return TurnOutcome(TurnEnding.FINISHED, f"Done: {task}", output=task, is_task_successful=True)

    async def salvage(self) -> Salvage:
        return NOTHING_KEPT

    def live_slot(self) -> SlotEndpoints | None:
        return self.slot

    async def save_profile(self) -> None:
        self.threads["save_profile"] = threading.get_ident()

    async def close(self) -> None:
        self.threads["close"] = threading.get_ident()
        self.closing.set()
        if self.close_gate is not None:
            await asyncio.to_thread(self.close_gate.wait, 60)
        self.closed = True


@dataclass
class Parts:
    sessions: SessionRepo
    feed: FeedRepo
    board: ActivityBoard
    record: SessionRecord
    built: list[ProbeEngine] = field(default_factory=list)

    async def engine(self) -> HostedEngine:
        def build(home: HomeLoop) -> Any:
            probe = ProbeEngine(
                self.record,
                HomeSessions(home, self.sessions),
                HomeFeed(home, self.feed),
                HomeActivity(home, self.board.reporter(self.record.id)),
            )
            self.built.append(probe)
            return probe

        return await HostedEngine.start(self.record.id, build)

    async def notes(self) -> list[str]:
        return [m.summary for m in await self.feed.all(self.record.id)]


@pytest.fixture
async def parts(tmp_path: Path) -> AsyncIterator[Parts]:
    async with Database(tmp_path / "host.db") as db:
        now = utc_now()
        record = SessionRecord(
            id=new_session_id(), status=SessionStatus.RUNNING, model="gpt-5.6-terra", llm_model="gpt-5.6-terra",
            reasoning_effort="none", created_at=now, updated_at=now,
        )  # fmt: skip
        sessions = SessionRepo(db)
        await sessions.insert(record)
        yield Parts(sessions, FeedRepo(db), ActivityBoard(), record)
    assert engine_threads() == 0, "an engine thread outlived its engine"


async def test_the_engine_works_on_its_own_thread_and_its_writes_land_on_the_api_loop(parts: Parts) -> None:
    api_thread = threading.get_ident()
    engine = await parts.engine()
    lease = FakeLease()
    try:
        await engine.launch(lease, "hello")
        outcome = await engine.run_turn("hello")
        probe = parts.built[0]
        assert probe.threads["launch"] != api_thread
        assert probe.threads["turn"] == probe.threads["launch"] == engine.thread_id
        assert lease.started_on == api_thread, "the slot's processes belong to the API loop"
        assert engine.live_slot() is lease.slot
        assert outcome.output == "hello"
        assert (await parts.sessions.get(parts.record.id)).step_count == 1
        assert await parts.notes() == ["hello"]
        activity = parts.board.activity(parts.record.id)
        assert activity is not None and activity.label == "Working"
        assert engine_threads() == 1
        await engine.save_profile()
    finally:
        await engine.close()
    assert probe.threads["save_profile"] == probe.threads["close"] == probe.threads["turn"]
    assert engine.thread_id is None
    assert engine_threads() == 0


async def test_cancelling_a_turn_cancels_it_on_the_engine_thread_and_waits_for_its_cleanup(parts: Parts) -> None:
    engine = await parts.engine()
    try:
        await engine.launch(FakeLease(), "block")
        turn = asyncio.create_task(engine.run_turn("block"))
        assert await asyncio.to_thread(parts.built[0].entered.wait, 30)
        turn.cancel()
        with pytest.raises(asyncio.CancelledError):
            await turn
        assert await parts.notes() == ["block", "cleaned up"]
    finally:
        await engine.close()


async def test_an_engine_error_keeps_its_type(parts: Parts) -> None:
    engine = await parts.engine()
    try:
        await engine.launch(FakeLease(), "die")
        with pytest.raises(ProcessDied):
            await engine.run_turn("die")
    finally:
        await engine.close()


async def test_a_dying_slot_is_reported_on_the_api_loop(parts: Parts) -> None:
    engine = await parts.engine()
    lease = FakeLease()
    try:
        await engine.launch(lease, "hello")
        died = asyncio.create_task(engine.wait_died())
        lease.slot.died.set_result(ProcessDied("Xvfb", 1))
        assert isinstance(await died, ProcessDied)
    finally:
        await engine.close()


async def test_salvage_after_close_reads_what_the_engine_kept(parts: Parts) -> None:
    engine = await parts.engine()
    await engine.launch(FakeLease(), "hello")
    await engine.close()
    assert await engine.salvage() is NOTHING_KEPT


async def test_a_close_cancelled_twice_still_waits_for_the_engine_and_its_thread(parts: Parts) -> None:
    engine = await parts.engine()
    await engine.launch(FakeLease(), "hello")
    probe = parts.built[0]
    probe.close_gate = threading.Event()
    closing = asyncio.create_task(engine.close())
    assert await asyncio.to_thread(probe.closing.wait, 30)
    closing.cancel()
    await asyncio.sleep(0)
    closing.cancel()  # a delete right after a stop cancels the owner again
    await asyncio.sleep(0)
    assert not closing.done(), "the close gave up while the engine was still closing"
    probe.close_gate.set()
    with pytest.raises(asyncio.CancelledError):
        await closing
    assert probe.closed
    assert engine.thread_id is None
    assert engine_threads() == 0
