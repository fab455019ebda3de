"""What a slot's processes can write, read and inherit (spec §24.3, §24.5): a hard disk cap that a sparse file does
not fool, on the slot's directory and its scratch space alike; only what the browser needs from ``/etc``; no proxy
or other secret variable of the server in any slot process. Each test performs what a hostile script would try."""

from __future__ import annotations

import asyncio
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest

from openbrowse.agent.files.confined import move_files
from openbrowse.agent.files.quota import AreaQuota
from openbrowse.config import Settings
from openbrowse.domain.scripts import ScriptCallError, ScriptRun
from openbrowse.errors import ResourceLimitExceeded
from openbrowse.slots.pool import SlotPool
from openbrowse.slots.process import ManagedProcess
from openbrowse.slots.recorder import ScreenRecorder, find_ffmpeg
from openbrowse.slots.slot import Slot
from openbrowse.slots.slot_disk import mount_area, unmount_area
from openbrowse.slots.slot_files import child_environment
from tests.support.ci_gate import required
from tests.support.display import needs_display
from tests.support.sandbox_gate import needs_sandbox
from tests.support.server import started_by_a_module

pytestmark = [
    pytest.mark.display,
    needs_display,
    needs_sandbox(),
]

DISK_MB = 48
PROXY_SECRET = "proxy-pass-5c1b7e"
KEY_SECRET = "sk-fake-disk-canary-90d2"
DUMP_ENV = "import os\nprint(dict(os.environ))"


def _fill(folder: Path) -> str:
    """A shell script: a 4 GiB sparse file, then 96 MiB of real blocks, in ``folder``; prints how dd ended."""
    return (
        f"truncate -s 4G {folder}/sparse.bin && echo sparse-ok; "
        f"dd if=/dev/zero of={folder}/fill.bin bs=1M count=96 2>&1; echo dd-exit=$?"
    )


async def _run_inside(slot: Slot, argv: list[str]) -> tuple[int, str]:
    process = ManagedProcess("probe", slot.confinement.command(argv), env={"PATH": "/usr/bin:/bin"}, expect_exit=True)
    async with process:
        code = await asyncio.wait_for(process.died, 60)
    return code, process.output_tail(4000)


@pytest.fixture
def small_disk(data_dir: Path) -> Settings:
    return Settings(OPENBROWSE_DATA_DIR=data_dir, MAX_CONCURRENT_SESSIONS=1, SLOT_DISK_MB=DISK_MB)


@pytest.mark.parametrize("where", ["downloads", "scratch"])
async def test_a_sparse_file_and_a_fill_stop_at_the_slots_disk_cap(
    small_disk: Settings, base_index: int, tmp_path: Path, where: str
) -> None:
    async with Slot(small_disk, base_index) as slot:
        folder = slot.downloads_dir if where == "downloads" else slot.temp_dir
        _code, output = await _run_inside(slot, ["/bin/sh", "-c", _fill(folder)])
        assert "sparse-ok" in output  # a sparse file costs nothing, and is allowed
        assert "No space left on device" in output, output
        assert "dd-exit=1" in output
        ended = await asyncio.wait_for(slot.watch(), 30)  # a full area ends the slot, typed
        assert isinstance(ended, ResourceLimitExceeded)
        assert ended.limit == "disk"
        # what the server copies out of it never goes past the owner's cap, whatever the file claims to be
        area = tmp_path / "area"
        moved = move_files(slot.downloads_dir, area / "downloads", AreaQuota.of(area, DISK_MB))
        assert "sparse.bin" in {refused.name for refused in moved.refused} or where == "scratch"
        kept = sum(path.stat().st_size for path in (area / "downloads").glob("*"))
        assert kept <= DISK_MB * 1024 * 1024
        assert shutil.disk_usage(small_disk.data_dir).free > 1 << 30  # the host's disk took none of it
    assert not os.path.ismount(slot.directory)  # nothing stays mounted after the slot
    assert not slot.temp_dir.exists()


async def test_the_sandboxs_private_tmp_is_capped_too(small_disk: Settings, base_index: int) -> None:
    async with Slot(small_disk, base_index) as slot:
        for folder in ("/tmp", "/dev/shm"):
            script = f"dd if=/dev/zero of={folder}/fill.bin bs=1M count=96 2>&1; echo dd-exit=$?"
            _code, output = await _run_inside(slot, ["/bin/sh", "-c", script])
            assert "No space left on device" in output, output


async def test_only_what_the_browser_needs_from_etc_is_in_the_sandbox(settings: Settings, base_index: int) -> None:
    async with Slot(settings, base_index) as slot:
        probe = (
            "for p in /etc/shadow /etc/gshadow /etc/ssh /etc/hostname /etc/environment /etc/ssl/private "
            "/etc/machine-id /etc/apt /etc/sudoers /etc/postgresql; do [ -e $p ] && echo present $p; done; "
            "cat /etc/hosts; ls /etc/fonts/fonts.conf /etc/ssl/certs/ca-certificates.crt /etc/ld.so.cache; "
            "/usr/bin/python3 -c 'import ssl; print(len(ssl.create_default_context().get_ca_certs()) > 100)'"
        )
        code, output = await _run_inside(slot, ["/bin/sh", "-c", probe])
        assert "present" not in output, output
        assert os.uname().nodename not in output.replace(f"slot-{base_index}", "")  # the host's name stays out
        assert "/etc/fonts/fonts.conf" in output
        assert "ca-certificates.crt" in output
        assert "True" in output
        # the browser still renders text with the system's fonts
        code, output = await _run_inside(slot, ["/usr/bin/fc-match", "sans-serif"])
        assert code == 0 and output.strip(), output


@pytest.fixture
def proxy_env() -> Iterator[None]:
    """An outbound proxy with credentials and a key, in the server's own environment."""
    names = ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "ALL_PROXY", "OPENAI_API_KEY", "SOME_SERVICE_TOKEN")
    saved = {name: os.environ.get(name) for name in names}
    proxy = f"http://user:{PROXY_SECRET}@proxy.invalid:3128"
    os.environ.update(dict.fromkeys(names[:4], proxy))
    os.environ.update({"OPENAI_API_KEY": KEY_SECRET, "SOME_SERVICE_TOKEN": KEY_SECRET})
    yield
    for name, value in saved.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


async def _refuse(method: str, args: dict[str, Any]) -> Any:
    raise ScriptCallError("ValueError", f"{method} is not served here")


def _environ(pid: int) -> bytes | None:
    try:
        return Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return None


async def test_no_proxy_or_secret_variable_reaches_any_slot_process(
    settings: Settings, base_index: int, proxy_env: None
) -> None:
    async with Slot(settings, base_index) as slot:
        host = slot.script_host
        assert host is not None
        outcome = await host.run(
            ScriptRun(owner="s", source=DUMP_ENV, filename="env.py", target_id=None, limit=30),
            _refuse,
        )
        recorder = None
        if (ffmpeg := find_ffmpeg(settings.RECORDING_FFMPEG)) is not None:
            settings.data_dir.mkdir(parents=True, exist_ok=True)
            recorder = ScreenRecorder(
                "recorder-env",
                ffmpeg=ffmpeg,
                display=slot.display,
                fps=2,
                output=settings.data_dir / "env-test.mp4.part",
                wrap=slot.confinement.command,
                env=slot.confinement.environment(child_environment(slot.tag)),
            )
            recorder.start()
        try:
            assert slot.confinement.sandbox is not None
            pids = set(slot.confinement.sandbox.cgroup.pids())
            pids |= {relay.pid for relay in slot.confinement.relays if relay.running}
            for process in psutil.Process().children(recursive=True):
                if started_by_a_module(process):
                    pids.add(process.pid)
            names: set[str] = set()
            for pid in pids:
                environ = _environ(pid)
                if environ is None:
                    continue
                try:
                    names.add(psutil.Process(pid).name())
                except psutil.Error:
                    continue
                assert PROXY_SECRET.encode() not in environ, psutil.Process(pid).cmdline()
                assert KEY_SECRET.encode() not in environ, psutil.Process(pid).cmdline()
                assert b"HTTP_PROXY=" not in environ.upper()
            assert {"Xvfb", "chromium", "x11vnc", "websockify", "socat"} <= names
            assert PROXY_SECRET not in outcome.stdout and KEY_SECRET not in outcome.stdout
            assert "HOME" in outcome.stdout, outcome
            assert any(name.startswith("python") for name in names)  # the script host
        finally:
            if recorder is not None:
                await recorder.stop()


@required(None if find_ffmpeg("ffmpeg") else "no ffmpeg here")
async def test_a_recording_stops_at_the_room_its_owner_has_left(settings: Settings, base_index: int) -> None:
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    output = settings.data_dir / "capped.mp4.part"
    async with Slot(settings, base_index) as slot:
        recorder = ScreenRecorder(
            "recorder-capped",
            ffmpeg=str(find_ffmpeg("ffmpeg")),
            display=slot.display,
            fps=5,
            output=output,
            wrap=slot.confinement.command,
            env=slot.confinement.environment(child_environment(slot.tag)),
            max_bytes=4096,
        )
        recorder.start()
        try:
            assert recorder.process is not None
            await asyncio.wait_for(recorder.process.died, 60)  # the kernel ended it at the limit
        finally:
            await recorder.stop()
    assert 0 < output.stat().st_size <= 4096


@required(None if os.geteuid() == 0 else "mounting needs root")
async def test_a_pool_start_detaches_the_slot_filesystems_a_crashed_server_left(
    settings: Settings, base_index: int
) -> None:
    left = Slot(settings, base_index)  # what a killed server leaves: both mounts, something written in them
    left.directory.mkdir(parents=True)
    left.temp_dir.mkdir(parents=True)
    mount_area(left.directory, left.temp_dir, 16, None)
    try:
        (left.directory / "downloads.bin").write_bytes(b"x" * 4096)
        assert os.path.ismount(left.directory) and os.path.ismount(left.temp_dir)
        async with SlotPool(settings, base_index=base_index):
            assert not os.path.ismount(left.directory)
            assert not os.path.ismount(left.temp_dir)
            assert not left.temp_dir.exists()
    finally:
        unmount_area(left.directory, left.temp_dir)
