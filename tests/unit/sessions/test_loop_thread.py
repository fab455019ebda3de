"""LoopThread and run_on: work runs on the other thread's loop; results, errors and cancellation carry across."""

from __future__ import annotations

import asyncio
import threading

import pytest

from openbrowse.errors import ProcessDied
from openbrowse.sessions.loop_thread import LoopClosed, LoopThread, RemoteCancelled, run_on


async def test_work_runs_on_the_thread_and_its_result_comes_back() -> None:
    async with LoopThread("test-loop") as worker:

        async def where() -> tuple[int, asyncio.AbstractEventLoop]:
            return threading.get_ident(), asyncio.get_running_loop()

        ident, loop = await worker.run(where)
    assert ident != threading.get_ident()
    assert loop is not asyncio.get_running_loop()


async def test_an_exception_keeps_its_type_and_object() -> None:
    raised = ProcessDied("Xvfb", 1)

    async def fail() -> None:
        raise raised

    async with LoopThread("test-loop") as worker:
        with pytest.raises(ProcessDied) as caught:
            await worker.run(fail)
    assert caught.value is raised


async def test_cancelling_the_caller_cancels_the_remote_task_and_waits_for_it() -> None:
    entered = threading.Event()
    cleaned_up = threading.Event()

    async def slow() -> None:
        try:
            entered.set()
            await asyncio.sleep(3600)
        finally:
            await asyncio.sleep(0.05)  # teardown that itself awaits: the caller must wait for it
            cleaned_up.set()

    async with LoopThread("test-loop") as worker:
        call = asyncio.create_task(worker.run(slow))
        assert await asyncio.to_thread(entered.wait, 30)
        call.cancel()
        with pytest.raises(asyncio.CancelledError):
            await call
        assert cleaned_up.is_set(), "the caller returned before the remote task finished"


async def test_the_remote_side_can_call_back_into_the_home_loop() -> None:
    home = asyncio.get_running_loop()
    seen: list[int] = []

    async def on_home() -> str:
        seen.append(threading.get_ident())
        return "home"

    async def engine_work() -> str:
        return await run_on(home, on_home)

    async with LoopThread("test-loop") as worker:
        assert await worker.run(engine_work) == "home"
    assert seen == [threading.get_ident()]


async def test_close_joins_the_thread_and_cancels_leftover_tasks() -> None:
    leftover_cancelled = threading.Event()

    async def leave_a_task() -> None:
        async def forever() -> None:
            try:
                await asyncio.sleep(3600)
            except asyncio.CancelledError:
                leftover_cancelled.set()
                raise

        asyncio.get_running_loop().create_task(forever())  # left behind on purpose

    worker = LoopThread("test-loop-close")
    async with worker:
        await worker.run(leave_a_task)
        assert any(t.name == "test-loop-close" for t in threading.enumerate())
    assert leftover_cancelled.is_set()
    assert not any(t.name == "test-loop-close" for t in threading.enumerate())
    with pytest.raises(LoopClosed):
        await worker.run(leave_a_task)


async def test_a_remote_task_cancelled_by_its_loop_is_an_error_not_a_cancellation_of_the_caller() -> None:
    async def cancel_myself() -> None:
        task = asyncio.current_task()
        assert task is not None
        task.cancel()
        await asyncio.sleep(0)

    async with LoopThread("test-loop") as worker:
        with pytest.raises(RemoteCancelled):
            await worker.run(cancel_myself)
