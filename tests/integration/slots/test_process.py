"""ManagedProcess against tiny real child scripts (simpervisor pattern): readiness, crash, kill, cancellation."""

from __future__ import annotations

import asyncio
import signal

import psutil
import pytest

from openbrowse.errors import ProcessStartError
from openbrowse.slots.probes import TcpPortProbe
from openbrowse.slots.process import ManagedProcess
from tests.support.waiting import wait_for_async

from .conftest import PYTHON, child, free_port, open_fds


def _gone(pid: int) -> bool:
    try:
        return bool(psutil.Process(pid).status() == psutil.STATUS_ZOMBIE)
    except psutil.NoSuchProcess:
        return True


async def _wait_gone(pid: int, within: float = 5.0) -> bool:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within
    while not _gone(pid):
        if loop.time() > deadline:
            return False
        await asyncio.sleep(0.02)
    return True


async def _wait_for_output(process: ManagedProcess, within: float = 10.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within
    while "\n" not in process.output_tail():
        assert loop.time() < deadline, "child printed nothing"
        await asyncio.sleep(0.02)


async def test_ready_child_becomes_ready_and_is_reaped() -> None:
    fds = open_fds()
    port = free_port()
    process = ManagedProcess("ready", [PYTHON, child("ready.py"), str(port)])
    async with process:
        await process.wait_ready(TcpPortProbe(port), within=10)
        assert process.running
        pid = process.pid
        assert psutil.Process(pid).pid == pid
        assert "ready on" in process.output_tail()
    assert process.returncode == -signal.SIGTERM
    assert not process.running
    with pytest.raises(psutil.NoSuchProcess):
        psutil.Process(pid)  # reaped, not a zombie
    assert open_fds() == fds


async def test_slow_child_is_waited_for_with_backoff() -> None:
    port = free_port()
    async with ManagedProcess("slow", [PYTHON, child("ready.py"), str(port), "0.5"]) as process:
        loop = asyncio.get_running_loop()
        started = loop.time()
        await process.wait_ready(TcpPortProbe(port), within=10)
        assert loop.time() - started >= 0.5


async def test_crash_before_ready_raises_with_output_tail() -> None:
    async with ManagedProcess("crasher", [PYTHON, child("crash.py")]) as process:
        with pytest.raises(ProcessStartError, match="exited with code 3 before it was ready") as info:
            await process.wait_ready(TcpPortProbe(free_port()), within=10)
    assert "boom: failing on purpose" in info.value.stderr_tail
    assert "boom" in info.value.message


async def test_never_ready_times_out() -> None:
    async with ManagedProcess("sleeper", [PYTHON, "-c", "import time; time.sleep(60)"]) as process:
        with pytest.raises(ProcessStartError, match=r"not ready within 0\.3 s"):
            await process.wait_ready(TcpPortProbe(free_port()), within=0.3)


async def test_missing_executable_raises_process_start_error() -> None:
    process = ManagedProcess("nothing", ["/nonexistent/definitely-not-here"])
    with pytest.raises(ProcessStartError, match="could not be started"):
        process.start()
    await process.aclose()  # harmless on a process that never started


async def test_sigterm_ignoring_child_and_its_group_are_killed() -> None:
    process = ManagedProcess("stubborn", [PYTHON, child("ignore_term.py")], terminate_grace=0.3)
    async with process:
        await _wait_for_output(process)
        grandchild = int(process.output_tail().split()[0])
        assert psutil.pid_exists(grandchild)
    assert process.returncode == -signal.SIGKILL
    assert await _wait_gone(grandchild)


async def test_died_resolves_when_the_child_is_killed_from_outside() -> None:
    port = free_port()
    async with ManagedProcess("victim", [PYTHON, child("ready.py"), str(port)]) as process:
        await process.wait_ready(TcpPortProbe(port), within=10)
        pid = process.pid
        psutil.Process(pid).kill()
        returncode = await asyncio.wait_for(process.died, 5)
        assert returncode == -signal.SIGKILL
        assert not process.running
        assert not process.closing
        with pytest.raises(psutil.NoSuchProcess):
            psutil.Process(pid)


async def test_cancelling_the_died_view_does_not_disturb_supervision() -> None:
    port = free_port()
    async with ManagedProcess("victim", [PYTHON, child("ready.py"), str(port)]) as process:
        view = process.died
        view.cancel()
        await process.wait_ready(TcpPortProbe(port), within=10)
        assert process.running


async def test_cancel_during_start_does_not_orphan() -> None:
    """anyio's test_process_aexit_cancellation_doesnt_orphan_process, for ManagedProcess."""
    spawned: list[int] = []

    async def run() -> None:
        async with ManagedProcess(
            "never-ready",
            [PYTHON, child("ignore_term.py")],
            terminate_grace=0.3,
            on_spawn=lambda p: spawned.append(p.pid),
        ) as process:
            await process.wait_ready(TcpPortProbe(free_port()), within=30)

    task = asyncio.create_task(run())
    await wait_for_async(lambda: spawned, 30, what="the child to start")  # cancelled while it waits to be ready
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert spawned
    assert _gone(spawned[0])


async def test_cancel_during_close_still_finishes_the_close() -> None:
    process = ManagedProcess("stubborn", [PYTHON, child("ignore_term.py")], terminate_grace=0.5)
    process.start()
    pid = process.pid
    await _wait_for_output(process)  # SIGTERM is ignored from here on
    closer = asyncio.create_task(process.aclose())
    await asyncio.sleep(0.1)
    closer.cancel()
    with pytest.raises(asyncio.CancelledError):
        await closer
    assert process.returncode == -signal.SIGKILL  # the shielded close ran to the end
    assert _gone(pid)


async def test_chatty_child_never_blocks_and_output_is_bounded() -> None:
    port = free_port()
    process = ManagedProcess("chatty", [PYTHON, child("chatty.py"), str(port), "4"], output_limit=16 * 1024)
    async with process:
        await process.wait_ready(TcpPortProbe(port), within=20)
        assert process.output.total_bytes >= 4 * 1024 * 1024
        assert len(process.output) <= 16 * 1024
        assert "last line of stdout" in process.output_tail(200)


async def test_exit_hooks_are_called_once() -> None:
    seen: list[tuple[str, int | None]] = []
    port = free_port()
    process = ManagedProcess(
        "hooked",
        [PYTHON, child("ready.py"), str(port)],
        on_spawn=lambda p: seen.append(("spawn", p.returncode)),
        on_exit=lambda p: seen.append(("exit", p.returncode)),
    )
    async with process:
        await process.wait_ready(TcpPortProbe(port), within=10)
    await process.aclose()
    assert seen == [("spawn", None), ("exit", -signal.SIGTERM)]
