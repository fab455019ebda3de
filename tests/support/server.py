"""Running the real product as a subprocess, the way a user does, and checking what it leaves behind."""

from __future__ import annotations

import contextlib
import os
import resource
import signal
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import psutil

from openbrowse.slots.seam import seam_dir
from openbrowse.slots.slot_files import scratch_root
from tests.support import loopback
from tests.support.ports import free_port
from tests.support.slot_range import claim_slot_base, free_slot_base, release_slot_base
from tests.support.waiting import wait_until

__all__ = [
    "BROWSER_STACK",
    "REPO",
    "ServerProcess",
    "browser_stack_processes",
    "free_port",
    "outlives_modules",
    "started_by_a_module",
    "wait_until",
]

REPO = Path(__file__).resolve().parents[2]
STARTUP_TIMEOUT = 60.0
FIXTURE_HOSTS = "127.0.0.1,localhost"  # where the fixture sites, the fake provider and the webhook receivers listen
BROWSER_STACK = ("Xvfb", "x11vnc", "websockify", "chromium", "chrome", "chrome_crashpad_handler", "socat")


_OUTLIVING: set[int] = set()
"""Pids of servers that a test process keeps for many modules (shared servers): a module's check for processes it
left behind does not count them or what runs under them."""


def outlives_modules(server: ServerProcess) -> ServerProcess:
    """Register ``server`` as kept by the test process across modules (see :func:`started_by_a_module`)."""
    if server.process is not None:
        _OUTLIVING.add(server.process.pid)
    return server


def started_by_a_module(process: psutil.Process) -> bool:
    """Whether ``process`` is not a shared server or one of its descendants."""
    try:
        lineage = [process, *process.parents()]
    except psutil.NoSuchProcess:
        return False
    return not any(member.pid in _OUTLIVING for member in lineage)


@dataclass
class ServerProcess:
    """``python -m openbrowse serve`` in its own home directory."""

    home: Path
    env: dict[str, str] = field(default_factory=dict)
    port: int = field(default_factory=free_port)
    process: subprocess.Popen[bytes] | None = None
    seen_children: dict[int, float] = field(default_factory=dict)
    """Every browser-stack process this server was seen to have: its pid and start time (a pid alone could be
    another process's by the time it is checked: pids wrap around at 32768 and a shared server lives for minutes)."""
    slot_base: int = field(default_factory=lambda: free_slot_base(4))
    python: str = sys.executable
    """The interpreter that serves (a benchmark's baseline has its own)."""
    open_files: int | None = None
    """The server's soft ``RLIMIT_NOFILE`` (None: this process's), for tests of its descriptor budget."""

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def v3(self) -> str:
        return f"{self.base_url}/v3"

    @property
    def log_path(self) -> Path:
        return self.home / "server.log"

    @property
    def temp_dir(self) -> Path:
        """The server's TMPDIR: nothing may be left in it (browser-use leaks scratch dirs unless told where)."""
        return self.home / "tmp"

    def temp_leftovers(self) -> list[str]:
        """Files in the server's TMPDIR, and Chromium scratch dirs of its slots, and its slots' seam dirs."""
        found = sorted(p.name for p in self.temp_dir.iterdir()) if self.temp_dir.exists() else []
        run_dir = self.home / "data" / "run"
        scratch = scratch_root(run_dir)
        seams = seam_dir(run_dir, 0).parent
        return found + sorted(str(p) for p in scratch.glob("*")) + ([str(seams)] if seams.exists() else [])

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def start(self) -> ServerProcess:
        claim_slot_base(self.slot_base)
        self.home.mkdir(parents=True, exist_ok=True)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ANTHROPIC_", "API_KEY"))}
        self.temp_dir.mkdir(exist_ok=True)
        env.update(
            {
                "OPENBROWSE_HOME": str(self.home),
                "PYTHONUNBUFFERED": "1",
                "SLOT_BASE_INDEX": str(self.slot_base),
                "TMPDIR": str(self.temp_dir),
                # Most tests count browsers at idle; the tests of warm spares turn them on. TEST_PREWARM_SLOTS=1
                # runs a whole test file with spares (e.g. the profile tests, whose runs then start warm).
                "PREWARM_SLOTS": os.environ.get("TEST_PREWARM_SLOTS", "0"),
                # SIGTERM drains for maintenance (spec §21.6): tests stop at once unless they test the drain.
                "SHUTDOWN_GRACE_S": "0",
            }
        )
        if "NETWORK_POLICY" not in self.env:
            # The product's default policy (public-only), with holes for the fixture sites, which are on loopback
            # (this service's own ports and its slots' stay refused whatever the holes say). A test that needs
            # `open`, or public-only without these holes, sets NETWORK_POLICY (and its own holes) itself.
            env["NETWORK_ALLOWED_HOSTS"] = FIXTURE_HOSTS
        env.update(self.env)
        log = self.log_path.open("ab")
        self.process = subprocess.Popen(
            [self.python, "-m", "openbrowse", "serve", "--port", str(self.port)],
            cwd=self.home,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=None if self.open_files is None else self._limit_open_files,
        )
        log.close()
        wait_until(self._ready, STARTUP_TIMEOUT, what=f"server on port {self.port}")
        return self

    def _limit_open_files(self) -> None:
        assert self.open_files is not None
        resource.setrlimit(resource.RLIMIT_NOFILE, (self.open_files, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))

    def open_fds(self) -> int:
        """How many descriptors the server process holds now."""
        assert self.process is not None
        return len(os.listdir(f"/proc/{self.process.pid}/fd"))

    def _ready(self) -> bool:
        assert self.process is not None
        if self.process.poll() is not None:
            raise RuntimeError(f"server exited with {self.process.returncode}:\n{self.log()[-4000:]}")
        try:
            return loopback.get(f"{self.base_url}/health", timeout=1).status_code == 200
        except httpx.HTTPError:
            return False

    def children(self) -> list[psutil.Process]:
        """The browser-stack processes this server started (own process groups, so tracked by ancestry)."""
        if self.process is None or self.process.poll() is not None:
            return []
        try:
            found = psutil.Process(self.process.pid).children(recursive=True)
        except psutil.NoSuchProcess:
            return []
        for child in found:
            with contextlib.suppress(psutil.NoSuchProcess):
                self.seen_children.setdefault(child.pid, child.create_time())
        return found

    def stop(self, timeout: float = 45.0) -> int:
        """SIGTERM (uvicorn's graceful shutdown) and wait; return the exit code."""
        if self.process is None:
            return 0
        self.children()
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)
        if not self.leftovers():
            release_slot_base(self.slot_base)
        return self.process.returncode

    def send_sigterm(self) -> None:
        """One SIGTERM, without waiting: the server drains for maintenance (spec §21.6); see :meth:`wait_exited`."""
        assert self.process is not None
        self.children()
        self.process.send_signal(signal.SIGTERM)

    def wait_exited(self, timeout: float) -> int:
        """Wait for the process to end (after :meth:`send_sigterm`); its exit code."""
        assert self.process is not None
        return self.process.wait(timeout)

    def kill_hard(self) -> None:
        """SIGKILL the server process only, as a crash would; its children are left to the next start."""
        assert self.process is not None
        self.children()
        self.process.kill()
        self.process.wait(10)

    def leftovers(self) -> list[psutil.Process]:
        """Processes this server ever started that are still alive."""
        alive = []
        for pid, started in self.seen_children.items():
            try:
                proc = psutil.Process(pid)
                if proc.create_time() == started and proc.status() != psutil.STATUS_ZOMBIE:
                    alive.append(proc)
            except psutil.NoSuchProcess:
                continue
        return alive


def browser_stack_processes(marker: str) -> list[psutil.Process]:
    """Live browser-stack processes whose command line mentions ``marker`` (e.g. a test's data dir)."""
    found = []
    for proc in psutil.process_iter(["name", "cmdline"]):
        try:
            name = proc.info["name"] or ""
            cmdline = " ".join(proc.info["cmdline"] or [])
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
        if any(part in name for part in BROWSER_STACK) and marker in cmdline:
            found.append(proc)
    return found
