"""A run's profile is saved before its session says the run ended, and before its slot goes (spec §9.3).

Each test holds the engine's profile save at a gate, looks at the session and the pool while the save waits, then
lets it finish: for every ending that closes the browser the status must still say the run is going on (or the
browser parked), and the slot must still be held.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator

import pytest

from openbrowse.domain.ids import SessionId
from openbrowse.domain.runs import TurnEnding
from openbrowse.domain.sessions import SessionStatus, StopStrategy
from openbrowse.sessions.requests import SessionCreate
from openbrowse.sessions.run_endings import StopReason
from tests.integration.sessions.conftest import Harness, HarnessFactory
from tests.integration.sessions.harness import FakeEngine, Script, wait_for_status

S = SessionStatus
RESTING = {S.IDLE, S.STOPPED, S.TIMED_OUT, S.ERROR}


def task(text: str, **fields: object) -> SessionCreate:
    sent = frozenset({"task", *fields})
    return SessionCreate(task=text, sent_fields=sent, **fields)  # type: ignore[arg-type]


async def engine_of(harness: Harness, session_id: SessionId) -> FakeEngine:
    """The session's engine once its run has started (the row left ``created``)."""
    for _ in range(5000):
        engine = harness.engines.by_session.get(session_id)
        if engine is not None and (await harness.manager.get(session_id)).status is not S.CREATED:
            return engine
        await asyncio.sleep(0.001)
    raise AssertionError(f"{session_id} never started")


async def saving_while(harness: Harness, engine: FakeEngine, *statuses: SessionStatus) -> None:
    """The save is waiting at the gate: the session still shows ``statuses`` and holds its slot."""
    await asyncio.wait_for(engine.saving.wait(), 30)
    record = await harness.manager.get(engine.record.id)
    assert record.status in statuses, record.status
    assert engine.record.id in harness.pool.leases, "the slot went before the profile was saved"
    assert not engine.profile_saved


Hold = Callable[[Harness], asyncio.Event]


@pytest.fixture
def hold(harness_factory: HarnessFactory) -> Iterator[Hold]:
    """Closes a harness's save gate; every gate opens again before the harnesses shut down."""
    gates: list[asyncio.Event] = []

    def close_gate(harness: Harness) -> asyncio.Event:
        harness.engines.save_gate = gate = asyncio.Event()
        gates.append(gate)
        return gate

    yield close_gate
    for gate in gates:
        gate.set()


@pytest.mark.parametrize(
    ("script", "final"),
    [
        (Script(), S.STOPPED),
        (Script(ending=TurnEnding.BUDGET), S.STOPPED),
        (Script(ending=TurnEnding.ERROR), S.ERROR),
    ],
    ids=["finished", "budget", "error"],
)
async def test_a_turn_that_ends_the_run_saves_before_its_status(
    harness: Harness, hold: Hold, script: Script, final: SessionStatus
) -> None:
    gate = hold(harness)
    record = await harness.manager.create(task("What does it cost?"))
    harness.engines.scripts[record.id] = script
    engine = await engine_of(harness, record.id)
    await saving_while(harness, engine, S.RUNNING)
    gate.set()
    ended = await wait_for_status(harness.manager, record.id, RESTING)
    assert ended.status is final and engine.profile_saved
    assert ended.output == "42.00 EUR" and not ended.browser_live


async def test_a_timed_out_turn_saves_before_its_status(harness_factory: HarnessFactory, hold: Hold) -> None:
    harness = await harness_factory(TASK_TIMEOUT=1)
    gate = hold(harness)
    record = await harness.manager.create(task("Never answers"))
    harness.engines.scripts[record.id] = Script(blocking=True)
    engine = await engine_of(harness, record.id)
    await saving_while(harness, engine, S.RUNNING)
    gate.set()
    ended = await wait_for_status(harness.manager, record.id, RESTING)
    assert ended.status is S.TIMED_OUT and engine.profile_saved


async def test_a_browser_that_dies_mid_turn_is_saved_as_far_as_it_can_before_the_error(
    harness: Harness, hold: Hold
) -> None:
    gate = hold(harness)
    record = await harness.manager.create(task("Crashes"))
    harness.engines.scripts[record.id] = Script(blocking=True)
    engine = await engine_of(harness, record.id)
    engine.die()
    await saving_while(harness, engine, S.RUNNING)
    gate.set()
    ended = await wait_for_status(harness.manager, record.id, RESTING)
    assert ended.status is S.ERROR and engine.profile_saved


@pytest.mark.parametrize("strategy", [StopStrategy.SESSION, StopStrategy.TASK])
async def test_a_stop_mid_turn_saves_before_its_status(harness: Harness, hold: Hold, strategy: StopStrategy) -> None:
    gate = hold(harness)
    record = await harness.manager.create(task("Takes long"))
    harness.engines.scripts[record.id] = Script(blocking=True)
    engine = await engine_of(harness, record.id)
    stopping = asyncio.ensure_future(harness.manager.stop(record.id, strategy))
    await saving_while(harness, engine, S.RUNNING)
    gate.set()
    stopped = await stopping
    assert stopped.status is (S.STOPPED if strategy is StopStrategy.SESSION else S.IDLE) and engine.profile_saved


async def test_a_stop_that_lands_while_the_profile_is_saved_keeps_the_turns_answer(
    harness: Harness, hold: Hold
) -> None:
    gate = hold(harness)
    record = await harness.manager.create(task("What does it cost?"))
    engine = await engine_of(harness, record.id)
    await saving_while(harness, engine, S.RUNNING)
    worker = harness.manager.worker(record.id)
    assert worker is not None
    stopping = asyncio.ensure_future(worker.stop(StopReason.STOP_SESSION))
    await asyncio.sleep(0)  # the stop has decided: the run is closing, so it waits instead of cancelling
    assert not stopping.done()
    gate.set()
    assert await stopping is False
    stopped = await harness.manager.get(record.id)
    assert stopped.status is S.STOPPED and stopped.output == "42.00 EUR" and stopped.is_task_successful is True
    notes = [m.summary for m in await harness.manager.feed.all(record.id)]
    assert not any(n.startswith("Stopped by request.") for n in notes), notes


async def parked(harness: Harness) -> tuple[SessionId, FakeEngine]:
    record = await harness.manager.create(task("What does it cost?", keep_alive=True))
    engine = await engine_of(harness, record.id)
    idle = await wait_for_status(harness.manager, record.id, RESTING)
    assert idle.status is S.IDLE and idle.browser_live and not engine.profile_saved
    worker = harness.manager.worker(record.id)
    for _ in range(1000):
        if worker is not None and worker.phase == "parked":
            break
        await asyncio.sleep(0.001)
    return record.id, engine


async def test_stopping_a_parked_session_saves_before_stopped(harness: Harness, hold: Hold) -> None:
    gate = hold(harness)
    session_id, engine = await parked(harness)
    stopping = asyncio.ensure_future(harness.manager.stop(session_id, StopStrategy.SESSION))
    await saving_while(harness, engine, S.IDLE)
    gate.set()
    assert (await stopping).status is S.STOPPED and engine.profile_saved


async def test_an_evicted_parked_browser_saves_before_stopped(harness: Harness, hold: Hold) -> None:
    gate = hold(harness)
    session_id, engine = await parked(harness)
    harness.pool.evict(session_id)
    await saving_while(harness, engine, S.IDLE)
    gate.set()
    released = await wait_for_status(harness.manager, session_id, {S.STOPPED})
    assert not released.browser_live and engine.profile_saved


async def test_a_delete_landing_on_a_stop_waits_for_the_browser_to_close(harness: Harness, hold: Hold) -> None:
    """The delete cancels the worker a second time while the stop's close saves the profile: the close is still
    awaited, and the slot is given back only after the browser closed."""
    gate = hold(harness)
    record = await harness.manager.create(task("Takes long"))
    harness.engines.scripts[record.id] = Script(blocking=True)
    engine = await engine_of(harness, record.id)
    stopping = asyncio.ensure_future(harness.manager.stop(record.id, StopStrategy.SESSION))
    await saving_while(harness, engine, S.RUNNING)
    deleting = asyncio.ensure_future(harness.manager.delete(record.id))
    for _ in range(50):  # let the delete's cancellation reach the worker and anything it would abandon run
        await asyncio.sleep(0)
    assert record.id in harness.pool.leases, "the slot went while the browser was still closing"
    assert not engine.closed
    gate.set()
    await asyncio.gather(stopping, deleting, return_exceptions=True)
    assert engine.closed and engine.profile_saved
    assert record.id not in harness.pool.leases
    assert not harness.engines.live
