"""How often a run reads its session's row (issue 24): each step is written, never read back; the worker reads
the row once per turn.

* The real AgentEngine's step callbacks over real SQLite, with the webhook outbox and the metrics observing the
  session as the app wires them: the agent runner calls ``ceiling()``, ``step_finished()`` and ``total_cost()`` once
  per step, and none of them reads the row.
* The real manager and worker over real SQLite (the harness' scripted engine in place of browser and agent): a warm
  follow-up turn costs the worker one read, plus the one its status change at the turn's end makes.

The engine's own read per turn (in ``run_turn``) needs a real browser; the e2e runs cover it.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from decimal import Decimal
from pathlib import Path

import pytest

from openbrowse.config import Settings
from openbrowse.domain.clock import utc_now
from openbrowse.domain.ids import SessionId
from openbrowse.domain.sessions import SessionRecord, SessionStatus
from openbrowse.sessions.metrics import COUNTED_SESSION_FIELDS, ServiceMetrics, StateSources
from openbrowse.sessions.requests import SessionCreate
from openbrowse.sessions.run import AgentEngine
from openbrowse.slots.pool import PoolStats
from openbrowse.store.db import Database
from openbrowse.store.feed import FeedRepo
from openbrowse.store.outbox import SESSION_EVENT_FIELDS, WebhookOutbox
from openbrowse.store.sessions import SessionRepo
from tests.integration.sessions.conftest import Harness, HarnessFactory
from tests.integration.sessions.harness import settle, wait_for_status

SESSION = SessionId("00000000-0000-4000-8000-0000000000ee")
STEPS = 5


class CountingSessions(SessionRepo):
    """The real repo, noting which task made each row read through it."""

    def __init__(self, db: Database) -> None:
        super().__init__(db)
        self.readers: list[str] = []

    @property
    def reads(self) -> int:
        return len(self.readers)

    def reads_by(self, task_name: str) -> int:
        return self.readers.count(task_name)

    def _note(self) -> None:
        task = asyncio.current_task()
        self.readers.append(task.get_name() if task is not None else "")

    async def get(self, session_id: str) -> SessionRecord:
        self._note()
        return await super().get(session_id)

    async def find(self, session_id: str) -> SessionRecord | None:
        self._note()
        return await super().find(session_id)


@pytest.fixture
async def db(tmp_path: Path) -> AsyncIterator[Database]:
    async with Database(tmp_path / "store.db") as database:
        yield database


async def test_steps_are_written_without_reading_the_row(db: Database, tmp_path: Path) -> None:
    settings = Settings(OPENBROWSE_HOME=tmp_path, ANTHROPIC_API_KEY="sk-ant-fake")
    sessions, outbox = CountingSessions(db), WebhookOutbox(db, "https://hooks.example.com/openbrowse")
    pool_stats = PoolStats(size=1, busy=1, parked=0, free=0, queued=0)
    metrics = ServiceMetrics(StateSources(sessions.count_by_status, lambda: pool_stats, outbox.pending_count))
    sessions.on_change(outbox.session_changed, fields=SESSION_EVENT_FIELDS)
    sessions.watch(metrics.session_changed, fields=COUNTED_SESSION_FIELDS)
    now = utc_now()
    record = await sessions.insert(
        SessionRecord(
            id=SESSION,
            status=SessionStatus.CREATED,
            model="claude-sonnet-5",
            llm_model="claude-sonnet-5",
            reasoning_effort="medium",
            max_cost_usd=Decimal("5"),
            created_at=now,
            updated_at=now,
        )
    )
    await sessions.update(SESSION, status=SessionStatus.RUNNING)
    engine = AgentEngine(settings, record, sessions, FeedRepo(db))
    reads_before = sessions.reads

    for step in range(1, STEPS + 1):
        assert await engine.ceiling() == Decimal("5")
        await engine.step_finished(f"step {step}")
        assert engine.total_cost() == Decimal(0)
    await engine.captcha_spent(Decimal("0.002"))

    assert sessions.reads == reads_before
    row = await sessions.get(SESSION)
    assert (row.step_count, row.last_step_summary, row.captcha_cost_usd) == (STEPS, f"step {STEPS}", Decimal("0.002"))
    assert metrics.registry.get_sample_value("openbrowse_step_duration_seconds_count") == STEPS
    assert await outbox.pending_count() == 1  # the start of the run; steps announce nothing


def task(text: str, **fields: object) -> SessionCreate:
    sent = frozenset({"task", *fields})
    return SessionCreate(task=text, sent_fields=sent, **fields)  # type: ignore[arg-type]


async def parked(harness: Harness, session_id: SessionId) -> None:
    await wait_for_status(harness.manager, session_id, {SessionStatus.IDLE})
    await settle(harness.manager)


async def test_a_warm_follow_up_turn_costs_the_worker_one_read_of_its_own(harness_factory: HarnessFactory) -> None:
    harness = await harness_factory(repo=CountingSessions)
    sessions = harness.manager.sessions
    assert isinstance(sessions, CountingSessions)
    created = await harness.manager.create(task("What does it cost?", keep_alive=True))
    worker_task = f"session-{created.id}"
    await parked(harness, created.id)
    for turn in range(3):
        before = sessions.reads_by(worker_task)
        await harness.manager.follow_up(created.id, task(f"And the next one ({turn})?"))
        await parked(harness, created.id)
        # the turn's own read, and the status port's (the turn's end moves the session along the table)
        assert sessions.reads_by(worker_task) - before == 2, sessions.readers
    assert sessions.reads_by(f"turn-{created.id}") == 0
