"""The per-slot sandbox (spec §24.2-24.5) seen from outside: uids, Chromium's own sandbox, secrets, files,
the network boundary and the memory cap. Each test performs what a hostile page or script would try."""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest
from playwright.async_api import async_playwright

from openbrowse.config import Settings
from openbrowse.errors import ResourceLimitExceeded
from openbrowse.slots.process import ManagedProcess
from openbrowse.slots.slot import Slot
from tests.support.display import needs_display
from tests.support.sandbox_gate import needs_sandbox

pytestmark = [
    pytest.mark.display,
    needs_display,
    needs_sandbox(),
]

SECRET = "sk-ant-sandbox-canary-7f3e91"


@pytest.fixture
def secret_env() -> Iterator[None]:
    """Provider keys in the server's own environment, as a real deployment has them."""
    saved = {k: os.environ.get(k) for k in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "API_KEY")}
    os.environ.update({"ANTHROPIC_API_KEY": SECRET, "OPENAI_API_KEY": SECRET, "API_KEY": SECRET})
    yield
    for key, value in saved.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value


def _inside(slot: Slot) -> list[psutil.Process]:
    """Every process in the slot's sandbox (its cgroup), holder included."""
    assert slot.confinement.sandbox is not None
    found = []
    for pid in slot.confinement.sandbox.cgroup.pids():
        try:
            found.append(psutil.Process(pid))
        except psutil.NoSuchProcess:
            continue
    return found


async def _run_inside(slot: Slot, argv: list[str]) -> tuple[int, str]:
    """Run ``argv`` in the slot's sandbox, as its scripts would be; return (exit code, output)."""
    process = ManagedProcess("probe", slot.confinement.command(argv), env={"PATH": "/usr/bin:/bin"}, expect_exit=True)
    async with process:
        code = await asyncio.wait_for(process.died, 30)
    return code, process.output_tail()


def _argv(process: psutil.Process) -> list[str]:
    try:
        return process.cmdline()
    except psutil.Error:
        return []


def _program(process: psutil.Process) -> str:
    try:
        if process.status() == psutil.STATUS_ZOMBIE:
            return "?"
        return process.name()
    except psutil.Error:
        return "?"


async def test_slot_processes_run_as_the_slots_own_uid_with_chromiums_sandbox_on(
    settings: Settings, base_index: int, secret_env: None
) -> None:
    async with Slot(settings, base_index) as slot:
        processes = _inside(slot)
        programs = {_program(p) for p in processes}
        assert {"Xvfb", "chromium", "x11vnc", "websockify", "socat"} <= programs
        uid = slot.confinement.uid
        assert uid not in {0, os.getuid()}
        for process in processes:
            if _program(process) in {"sh", "bwrap", "nsenter", "?"}:  # the launchers, before they exec
                continue
            try:
                uids, argv = process.uids(), process.cmdline()
            except psutil.Error:  # a per-connection relay child that just ended
                continue
            assert uids.real == uid, argv
            assert uids.effective == uid
            assert "--no-sandbox" not in argv
        renderers = [p for p in processes if "--type=renderer" in _argv(p)]
        assert renderers
        for renderer in renderers:  # Chromium's own sandbox: seccomp-bpf, and a user namespace of its own
            status = Path(f"/proc/{renderer.pid}/status").read_text()
            assert "Seccomp:\t2" in status
            assert os.readlink(f"/proc/{renderer.pid}/ns/user") != os.readlink("/proc/self/ns/user")


async def test_no_secret_enters_the_sandbox(settings: Settings, base_index: int, secret_env: None) -> None:
    home = settings.OPENBROWSE_HOME
    env_file = settings.data_dir.parent / ".env"
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    env_file.write_text(f"ANTHROPIC_API_KEY={SECRET}\n")
    settings.db_path.write_text(f"sensitiveData {SECRET}")
    async with Slot(settings, base_index) as slot:
        checked = 0
        for process in _inside(slot):
            try:
                environ = Path(f"/proc/{process.pid}/environ").read_bytes()
                targets = [os.readlink(fd) for fd in Path(f"/proc/{process.pid}/fd").iterdir()]
            except OSError:  # a short-lived helper that is already gone
                continue
            checked += 1
            assert SECRET.encode() not in environ, process.cmdline()
            assert not {str(env_file), str(settings.db_path)} & set(targets)
        assert checked >= 8
        # what a script inside would try: read the keys, the database, the server's environment, other files
        for path in (env_file, settings.db_path, Path(f"/proc/{os.getpid()}/environ"), home):
            code, output = await _run_inside(slot, ["/bin/cat", str(path)])
            assert code != 0
            assert SECRET not in output
        code, output = await _run_inside(slot, ["/bin/ls", str(settings.data_dir)])
        assert output.split() == ["run"]  # only the path down to the slot's own directory exists
        code, output = await _run_inside(slot, ["/bin/ls", "/proc"])
        host_pids = {str(p) for p in psutil.pids()}
        assert str(os.getpid()) not in output.split() or len(output.split()) < len(host_pids) / 2


async def test_a_page_cannot_reach_another_slots_devtools_or_the_host(settings: Settings, base_index: int) -> None:
    async with Slot(settings, base_index) as slot, Slot(settings, base_index + 1) as other:
        async with async_playwright() as driver:
            browser = await driver.chromium.connect_over_cdp(slot.cdp_url)
            try:
                page = browser.contexts[0].pages[0]
                for url in (f"http://127.0.0.1:{other.cdp_port}/json/list", f"http://localhost:{other.cdp_port}/"):
                    response = await page.goto(url)
                    assert response is not None
                    assert response.status == 403
                    body = await page.content()
                    assert "webSocketDebuggerUrl" not in body
                    assert "Blocked by OpenBrowse network policy" in body
                answer = await page.evaluate(
                    """async (port) => { try { const r = await fetch(`http://127.0.0.1:${port}/json/version`);
                       return r.status + ' ' + (await r.text()); } catch (e) { return 'error ' + e; } }""",
                    other.cdp_port,
                )
                assert "webSocketDebuggerUrl" not in answer
            finally:
                await browser.close()
        # a raw socket from inside: the other slot's port is not in this namespace, the host has no route
        probe = (
            "import socket,sys\n"
            "for host, port in [('127.0.0.1', int(sys.argv[1])), ('10.0.0.1', 80), ('169.254.169.254', 80)]:\n"
            "    s = socket.socket(); s.settimeout(3)\n"
            "    print(host, s.connect_ex((host, port)))\n"
        )
        code, output = await _run_inside(slot, [sys.executable, "-I", "-c", probe, str(other.cdp_port)])
        assert code == 0, output
        for line in output.strip().splitlines():
            host, errno = line.split()
            assert errno != "0", f"{host} was reachable from inside the sandbox"


async def test_a_memory_bomb_costs_its_sandbox_not_the_host(data_dir: Path, base_index: int) -> None:
    settings = Settings(OPENBROWSE_DATA_DIR=data_dir, MAX_CONCURRENT_SESSIONS=1, SLOT_MEMORY_MB=768)
    warnings: list[str] = []
    bomb = [sys.executable, "-I", "-c", "x = b'x' * (2 << 30)"]
    async with Slot(settings, base_index) as slot:
        slot.confinement.warning_listeners.append(warnings.append)
        code, _ = await _run_inside(slot, bomb)
        assert code == -9  # the kernel's OOM killer, inside the slot's cgroup only
        assert slot.running
        await asyncio.wait_for(_until(lambda: bool(warnings)), 10)
        assert "memory cap of 768 MiB" in warnings[0]
        code, _ = await _run_inside(slot, bomb)
        assert code == -9
        ended = await asyncio.wait_for(slot.watch(), 10)
        assert isinstance(ended, ResourceLimitExceeded)
        assert ended.limit == "memory"


async def _until(condition: object) -> None:
    assert callable(condition)
    while not condition():
        await asyncio.sleep(0.05)


async def test_chromium_reads_the_servers_font_cache_and_cannot_change_it(settings: Settings, base_index: int) -> None:
    async with Slot(settings, base_index) as slot:
        # Chromium found every font in the shared cache: it wrote no cache of its own into the slot's home
        assert not (slot.directory / ".cache" / "fontconfig").exists()
        script = "ls /var/cache/fontconfig; touch /var/cache/fontconfig/x"
        code, output = await _run_inside(slot, ["/bin/sh", "-c", script])
        assert code != 0
        assert ".cache-" in output
        assert "cannot touch" in output
        cache = settings.run_dir / "fontconfig"
        assert not (cache / "x").exists()
        # the cache describes the fonts a slot sees anyway, and no host path beyond them
        for path in cache.glob("*.cache-*"):
            for name in ("/root", str(settings.data_dir), "/home"):
                assert name.encode() not in path.read_bytes()


async def test_a_slot_may_burst_above_its_cpu_cap_for_one_period(settings: Settings, base_index: int) -> None:
    async with Slot(settings, base_index) as slot:
        assert slot.confinement.sandbox is not None
        cgroup = slot.confinement.sandbox.cgroup
        if cgroup.flavour.value != "v1":
            pytest.skip("checked on cgroup v1 hosts (ours)")
        cpu = cgroup.directories()[2]
        quota = int((cpu / "cpu.cfs_quota_us").read_text())
        assert quota == int(settings.SLOT_CPU * 100_000)  # the cap itself is unchanged
        assert int((cpu / "cpu.cfs_burst_us").read_text()) == quota
