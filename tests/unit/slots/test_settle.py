"""A spare is ready once its processes go quiet: :func:`settle` tells a busy tree from an idle one."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from collections.abc import Iterator

import pytest

from openbrowse.slots import settle as settle_module
from openbrowse.slots.settle import cpu_seconds, settle

SPIN = "import os\nif os.fork() == 0:\n    while True: pass\nwhile True: pass\n"


@pytest.fixture
def spinner() -> Iterator[subprocess.Popen[bytes]]:
    """A process and its forked child, both spinning on a core."""
    process = subprocess.Popen([sys.executable, "-c", SPIN], start_new_session=True)
    try:
        yield process
    finally:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()


@pytest.fixture
def sleeper() -> Iterator[subprocess.Popen[bytes]]:
    process = subprocess.Popen(["sleep", "60"])
    try:
        yield process
    finally:
        process.kill()
        process.wait()


def test_cpu_seconds_counts_the_children_of_a_process(spinner: subprocess.Popen[bytes]) -> None:
    before = cpu_seconds([spinner.pid])
    deadline_spent = before + 0.4
    while cpu_seconds([spinner.pid]) < deadline_spent:  # two spinning processes: twice the wall time
        pass
    assert cpu_seconds([spinner.pid]) > before


def test_cpu_seconds_of_gone_processes_is_zero() -> None:
    process = subprocess.Popen(["true"])
    process.wait()
    assert cpu_seconds([process.pid]) == 0.0


async def test_an_idle_tree_settles_before_the_limit(
    sleeper: subprocess.Popen[bytes], monkeypatch: pytest.MonkeyPatch
) -> None:
    # With the limit far away, returning at all means the tree was seen quiet (a loaded host only slows the windows).
    monkeypatch.setattr(settle_module, "SETTLE_LIMIT_S", 600.0)
    await asyncio.wait_for(settle([sleeper.pid]), timeout=60)


async def test_a_busy_tree_is_waited_for_until_the_limit(
    spinner: subprocess.Popen[bytes], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(settle_module, "SETTLE_LIMIT_S", 0.8)
    # Any CPU tick in a window counts as busy: a spinner starved by a loaded host still gets some.
    monkeypatch.setattr(settle_module, "QUIET_CORES", 0.001)
    loop = asyncio.get_running_loop()
    started = loop.time()
    await settle([spinner.pid])
    assert loop.time() - started >= 0.8
