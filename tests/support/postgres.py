"""A throwaway PostgreSQL for the tests, from Debian's ``postgresql`` package (spec §26.1).

One server per test session (per xdist worker): ``initdb`` into a temp dir, ``pg_ctl start`` on a free loopback
port with its socket in that dir, run as ``nobody`` when the tests run as root (PostgreSQL refuses root), stopped
and removed at the end. Each test that wants one gets a fresh database in it (:meth:`ThrowawayPostgres.new_database`).
Durability is off (``fsync``, full pages, synchronous commit): nothing here outlives the session.
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import uuid
from pathlib import Path

TEST_CLUSTER_SECRET = "test-cluster-secret-0123456789"
"""What servers on the throwaway PostgreSQL show each other (PostgreSQL requires one, spec §26.2)."""
UNPRIVILEGED_USER = "nobody"
SUPERUSER = "postgres"
START_ATTEMPTS = 3
OWNER_FILE = "owner.pid"
MISSING = (
    "PostgreSQL's server binaries are not installed (Debian: apt-get install postgresql; `make test` installs it): "
    "the store's tests run on PostgreSQL too"
)


def server_bin_dir() -> Path | None:
    """The newest ``/usr/lib/postgresql/<major>/bin`` that has ``initdb`` (Debian keeps them off PATH)."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(Path(p).parent.parent.name))
    return Path(found[-1]).parent if found else None


def remove_orphans(bin_dir: Path) -> None:
    """Stop and remove the throwaway servers of test runs that were killed before their clean-up ran (a worker
    killed by a timeout, an interrupted run): each records the pid of the test process that owns it."""
    for root in Path("/tmp" if os.geteuid() == 0 else tempfile.gettempdir()).glob("openbrowse-pg-*"):
        try:
            owner = int((root / OWNER_FILE).read_text())
        except (OSError, ValueError):
            continue  # being created right now, or not ours to judge
        if _alive(owner):
            continue
        if (root / "data" / "postmaster.pid").exists():
            subprocess.run(
                [str(bin_dir / "pg_ctl"), "stop", "-D", str(root / "data"), "-m", "immediate", "-w"],
                user=_unprivileged_uid() if os.geteuid() == 0 else None,
                capture_output=True,
                check=False,
                start_new_session=True,
                env={"PATH": "/usr/bin:/bin", "LC_ALL": "C.UTF-8"},
            )
        shutil.rmtree(root, ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _unprivileged_uid() -> int:
    return pwd.getpwnam(UNPRIVILEGED_USER).pw_uid


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class ThrowawayPostgres:
    def __init__(self, bin_dir: Path) -> None:
        self._bin = bin_dir
        # as root, in /tmp itself: nobody must reach it, whatever TMPDIR says (and the socket path stays short)
        self._root = Path(tempfile.mkdtemp(prefix="openbrowse-pg-", dir="/tmp" if os.geteuid() == 0 else None))
        self._data = self._root / "data"
        (self._root / OWNER_FILE).write_text(str(os.getpid()))
        self.port = 0
        self._options = ""
        self._as_user: int | None = None
        self._group: int | None = None
        if os.geteuid() == 0:
            entry = pwd.getpwnam(UNPRIVILEGED_USER)
            self._as_user, self._group = entry.pw_uid, entry.pw_gid
            os.chown(self._root, entry.pw_uid, entry.pw_gid)

    def _run(self, *args: str) -> None:
        done = subprocess.run(
            args,
            user=self._as_user,
            group=self._group,
            extra_groups=[] if self._as_user is not None else None,
            cwd=self._root,
            capture_output=True,
            text=True,
            check=False,
            start_new_session=True,
            env={"PATH": "/usr/bin:/bin", "LC_ALL": "C.UTF-8", "HOME": str(self._root)},
        )
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(args[:2])} failed ({done.returncode}): {done.stderr.strip()[-2000:]}")

    def start(self) -> None:
        self._run(
            str(self._bin / "initdb"), "-D", str(self._data), "-U", SUPERUSER, "-A", "trust", "-E", "UTF8", "--no-sync"
        )
        for attempt in range(START_ATTEMPTS):  # a port picked free may be taken by another worker meanwhile
            self.port = _free_port()
            options = (
                f"-p {self.port} -k {self._root} -c listen_addresses=127.0.0.1 -c fsync=off "
                "-c full_page_writes=off -c synchronous_commit=off -c max_connections=200"
            )
            self._options = options
            try:
                self._run(
                    str(self._bin / "pg_ctl"), "start", "-D", str(self._data), "-w", "-t", "60",
                    "-l", str(self._root / "server.log"), "-o", options,
                )  # fmt: skip
                return
            except RuntimeError:
                if attempt == START_ATTEMPTS - 1:
                    raise

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://{SUPERUSER}@127.0.0.1:{self.port}/{database}"

    def new_database(self) -> str:
        """A fresh, empty database; its URL."""
        name = f"t_{uuid.uuid4().hex[:16]}"
        self._run(str(self._bin / "createdb"), "-h", "127.0.0.1", "-p", str(self.port), "-U", SUPERUSER, name)
        return self.url(name)

    def pause(self) -> None:
        """Stop the server, keeping its data and port (the database going away under a running client)."""
        self._run(str(self._bin / "pg_ctl"), "stop", "-D", str(self._data), "-m", "fast", "-w")

    def resume(self) -> None:
        """Start it again on the same port."""
        self._run(
            str(self._bin / "pg_ctl"), "start", "-D", str(self._data), "-w", "-t", "60",
            "-l", str(self._root / "server.log"), "-o", self._options,
        )  # fmt: skip

    def stop(self) -> None:
        with contextlib.suppress(RuntimeError):
            if self._data.exists():
                self._run(str(self._bin / "pg_ctl"), "stop", "-D", str(self._data), "-m", "immediate", "-w")
        shutil.rmtree(self._root, ignore_errors=True)
