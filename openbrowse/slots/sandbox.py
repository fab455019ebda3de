"""The per-slot sandbox (spec §24.2): one set of namespaces that every process of a slot is entered into.

Why this shape. The design card keeps the server as one process that owns every child (own process group, always
reaped, recorded in the ledger). So the sandbox is not a launcher that owns its children: it is a *holder*, a
bubblewrap process that creates the namespaces and then only sleeps, and each slot process is spawned by the server
as usual, through an argv prefix (:meth:`SlotSandbox.command`) that enters those namespaces and drops to the slot's
uid before ``exec``::

    [sh -c 'join the slot cgroup'] nsenter -t <holder> --mount --pid --net --ipc --uts --
        setpriv --reuid U --regid U --clear-groups --no-new-privs --inh-caps=-all --bounding-set=-all -- <argv>

bubblewrap (Debian's ``bubblewrap``) builds the mount namespace: a fresh root holding ``/usr`` and the few entries
of ``/etc`` the slot's programs read (:mod:`.etc_view`), read-only (with its own ``/etc/passwd`` naming the slot
user), the interpreter and virtualenv the script host needs
(read-only), the server's shared font cache at ``/var/cache/fontconfig`` (read-only, :mod:`.font_cache`), a new
``/proc`` for the new pid namespace, a minimal ``/dev``, private tmpfs ``/tmp`` and ``/dev/shm``,
and, writable, only the slot's own directory and its short scratch directory, each at the same path as on the host
(so a path means the same file inside and out). The slot's seam directory (:mod:`.seam`: root's, holding the
``passwd``/``group`` files, the egress socket and the live view's token file) is bound read-only at its own path.
The data directory, ``.env``, the database, other slots and the host's ``/proc`` and ``/sys`` are simply absent.
The network namespace has only ``lo``; the slot's one way out is the server's egress enforcer behind the Unix
socket in the seam directory (spec §24.4). When the holder dies, the
kernel kills everything in its pid namespace: no sandboxed process outlives its slot.

bubblewrap runs as root without a user namespace (it needs none to create these namespaces as root), so the slot's
processes run under a real, unprivileged host uid ``SANDBOX_UID_BASE + index``: not root, not the server's uid.
Chromium then runs with its own sandbox on (it creates its user namespaces as that uid).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import shlex
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterable, Mapping, Sequence
from functools import cache
from pathlib import Path

from openbrowse.errors import BrowserUnavailable, ProcessStartError
from openbrowse.slots.cgroups import SlotCgroup
from openbrowse.slots.etc_view import etc_binds
from openbrowse.slots.process import ManagedProcess, ProcessHook
from openbrowse.slots.seam import SeamDir

__all__ = ["UNSHARE", "SandboxUnavailable", "SlotSandbox", "give_to", "sandbox_problem", "sandbox_tool", "system_binds"]

logger = logging.getLogger(__name__)

HOLDER_READY_TIMEOUT = 10.0
HOLDER_EXIT_TIMEOUT = 5.0
PROBE_TIMEOUT = 10.0
SYSTEM_DIRS = ("/usr",)
TOP_LEVEL_LINKS = ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
ENTER = ("--mount", "--pid", "--net", "--ipc", "--uts")
"""The namespaces ``nsenter`` joins; bubblewrap makes them with :data:`UNSHARE` (mount namespaces always)."""
LOOK_ONLINE = (
    "{ ip link add obnet0 type veth peer name obnet1 && ip address add 192.0.2.1/32 dev obnet0"
    " && ip link set obnet1 up && ip link set obnet0 up; } >/dev/null 2>&1 || true"
)
"""With only ``lo`` in its namespace, Chromium believes it is offline (``navigator.onLine`` false, and sites that
check it say so) although every request leaves through the egress relay. A veth pair inside the namespace, with a
documentation-range address (TEST-NET-1) and no route beyond it, makes it look online and opens no way out. Set up
while the holder is still root in the namespace; where ``ip`` or veth is missing the browser only looks offline."""
SCRIPT_ENTER = ("--mount", "--pid", "--uts")
"""The script host joins the slot's mount, pid and uts namespaces; it gets network, ipc and mount namespaces of its
own on top (:meth:`SlotSandbox.script_command`), so neither Chromium's loopback nor its SysV shared memory exist
for it."""
SCRIPT_TMP_SIZE = "128m"
UNSHARE = ("--unshare-net", "--unshare-pid", "--unshare-ipc", "--unshare-uts")
SANDBOX_FONT_CACHE = "/var/cache/fontconfig"
"""Where a sandbox sees the server's shared fontconfig cache (the system cache dir of Debian's ``fonts.conf``)."""


class SandboxUnavailable(BrowserUnavailable):
    """The kernel or the host refuses the sandbox, and ``ALLOW_UNSANDBOXED`` is not set."""

    code = "sandbox_unavailable"


def sandbox_tool(name: str) -> str | None:
    """Where the host keeps ``name`` (``PATH``, else ``/usr/bin`` or ``/bin``), or None."""
    return shutil.which(name) or next((p for p in (f"/usr/bin/{name}", f"/bin/{name}") if os.access(p, os.X_OK)), None)


@cache
def sandbox_problem() -> str | None:
    """Why slots cannot be sandboxed on this host, or None when they can (blocking; cached for the process)."""
    missing = [name for name in ("bwrap", "nsenter", "setpriv") if sandbox_tool(name) is None]
    if missing:
        return f"{', '.join(missing)} not installed (Debian packages bubblewrap and util-linux)"
    if os.geteuid() != 0:
        return "the server does not run as root, which creating a slot's namespaces and uid needs"
    argv = [sandbox_tool("bwrap") or "bwrap", *UNSHARE, "--ro-bind", "/", "/", "--proc", "/proc", "--", "/bin/true"]
    try:
        result = subprocess.run(argv, capture_output=True, timeout=PROBE_TIMEOUT, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"bubblewrap could not run ({exc})"
    if result.returncode != 0:
        detail = result.stderr.decode(errors="replace").strip().splitlines()
        return f"the kernel refused new namespaces ({detail[-1] if detail else f'exit {result.returncode}'})"
    return None


def system_binds() -> list[str]:
    """bubblewrap arguments for the read-only system: ``/usr``, the entries of ``/etc`` the slot's programs need
    (:func:`~.etc_view.etc_binds`), the merged-/usr links."""
    args: list[str] = []
    for directory in SYSTEM_DIRS:
        args += ["--ro-bind", directory, directory]
    args += etc_binds()
    for link in TOP_LEVEL_LINKS:
        path = Path(link)
        if path.is_symlink():
            args += ["--symlink", os.readlink(path), link]
        elif path.is_dir():
            args += ["--ro-bind", link, link]
    return args


def _python_paths() -> list[Path]:
    """What the script host's interpreter needs: the base installation and the virtualenv (both read-only)."""
    paths = {Path(sys.base_prefix).resolve(), Path(sys.prefix).resolve()}
    package = Path(__file__).resolve().parent.parent / "scripthost"
    if package.is_dir():
        paths.add(package)
    return sorted(paths)


def _under(path: Path, roots: Iterable[Path]) -> bool:
    return any(path == root or path.is_relative_to(root) for root in roots)


def _dirs_for(targets: Iterable[Path], mounted: Iterable[Path]) -> list[str]:
    """``--dir`` arguments (mode 0755) for every ancestor of ``targets`` that no mount provides."""
    roots = list(mounted)
    made: list[Path] = []
    for target in targets:
        for ancestor in reversed(target.parents):
            if ancestor in (Path("/"), Path("/tmp")) or _under(ancestor, roots) or ancestor in made:
                continue
            made.append(ancestor)
    args: list[str] = []
    for directory in made:
        args += ["--perms", "0755", "--dir", str(directory)]
    return args


def give_to(uid: int, *paths: Path) -> None:
    """Hand files to the slot's uid (blocking): each path, and everything below the directories among them."""
    for path in paths:
        if not path.exists():
            continue
        os.chown(path, uid, uid, follow_symlinks=False)
        if path.is_dir() and not path.is_symlink():
            for root, dirs, files in os.walk(path):
                for name in (*dirs, *files):
                    os.chown(os.path.join(root, name), uid, uid, follow_symlinks=False)


class SlotSandbox:
    """The namespaces, uid and cgroup of one slot. Start with :meth:`start`; :meth:`aclose` ends everything inside."""

    def __init__(
        self,
        name: str,
        *,
        uid: int,
        writable: Sequence[Path],
        socket_dir: Path,
        seam: SeamDir,
        home: Path,
        cgroup: SlotCgroup,
        hidden: Sequence[Path] = (),
        readonly: Sequence[Path] = (),
        font_cache: Path | None = None,
        tmp_size_mb: int | None = None,
        env: Mapping[str, str] | None = None,
        on_spawn: ProcessHook | None = None,
        on_exit: ProcessHook | None = None,
    ) -> None:
        """``writable`` directories (and ``socket_dir``, the slot's scratch) are bound read-write at their own paths,
        ``seam`` (open, see :mod:`.seam`) read-only; ``hidden`` paths
        (the data directory, ``.env``) are masked if a read-only mount would otherwise show them; ``readonly``
        directories (a browser outside ``/usr``) are bound read-only; ``font_cache`` (see :mod:`.font_cache`) is bound
        read-only as the system's fontconfig cache. ``tmp_size_mb`` caps the private ``/tmp`` and ``/dev/shm`` (memory,
        charged to the slot's cgroup like the slot's own filesystem, see :mod:`.slot_disk`)."""
        self.name = name
        self.uid = uid
        self.writable = [Path(p) for p in writable]
        self.socket_dir = socket_dir
        self.seam = seam
        self.home = home
        self.cgroup = cgroup
        self.hidden = [Path(p) for p in hidden]
        self.readonly = [Path(p).resolve() for p in readonly]
        self.font_cache = font_cache
        self.tmp_size_mb = tmp_size_mb
        self._env = dict(env or {})
        self._on_spawn = on_spawn
        self._on_exit = on_exit
        self.holder: ManagedProcess | None = None
        self.holder_pid: int | None = None

    @property
    def running(self) -> bool:
        return self.holder is not None and self.holder.running and self.holder_pid is not None

    # -- set-up ---------------------------------------------------------------------------------------------
    def _write_identity(self) -> tuple[Path, Path, Path]:
        """``passwd``, ``group`` and ``hosts`` naming the slot, in the seam dir (root's; written through its
        descriptor)."""
        passwd = (
            "root:x:0:0:root:/nonexistent:/usr/sbin/nologin\n"
            f"slot:x:{self.uid}:{self.uid}:OpenBrowse slot:{self.home}:/usr/sbin/nologin\n"
            "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n"
        )
        group = f"root:x:0:\nslot:x:{self.uid}:\nnogroup:x:65534:\n"
        hosts = f"127.0.0.1\tlocalhost {self.name}\n::1\tlocalhost ip6-localhost ip6-loopback\n"
        return (
            self.seam.write_file("passwd", passwd.encode(), mode=0o644),
            self.seam.write_file("group", group.encode(), mode=0o644),
            self.seam.write_file("hosts", hosts.encode(), mode=0o644),
        )

    def _mask_args(self, mounted: Sequence[Path]) -> list[str]:
        args: list[str] = []
        for path in self.hidden:
            resolved = path.resolve()
            if not _under(resolved, mounted) or not resolved.exists():
                continue
            args += ["--tmpfs", str(resolved)] if resolved.is_dir() else ["--ro-bind", "/dev/null", str(resolved)]
        return args

    def holder_argv(self, info_fd: int, ready_fd: int) -> list[str]:
        passwd, group, hosts = (self.seam.path / name for name in ("passwd", "group", "hosts"))  # by _prepare
        python = sorted({*_python_paths(), *self.readonly})
        mounted = [Path(d) for d in SYSTEM_DIRS] + python
        args = [sandbox_tool("bwrap") or "bwrap", *UNSHARE, "--die-with-parent", "--hostname", self.name]
        args += system_binds()
        args += ["--ro-bind", str(passwd), "/etc/passwd", "--ro-bind", str(group), "/etc/group"]
        args += ["--ro-bind", str(hosts), "/etc/hosts"]
        size = ["--size", str(self.tmp_size_mb * 1024 * 1024)] if self.tmp_size_mb is not None else []
        args += ["--proc", "/proc", "--dev", "/dev", "--perms", "1777", *size, "--tmpfs", "/dev/shm"]
        args += ["--perms", "1777", *size, "--tmpfs", "/tmp"]
        if self.font_cache is not None:  # bubblewrap makes missing parents 0700: the slot's uid must get through
            args += _dirs_for([Path(SANDBOX_FONT_CACHE)], [Path(d) for d in SYSTEM_DIRS])
            args += ["--ro-bind", str(self.font_cache), SANDBOX_FONT_CACHE]
        system = [Path(d) for d in SYSTEM_DIRS]
        extra = [path for path in python if not _under(path, system)]
        args += _dirs_for(extra, system)
        for path in extra:
            args += ["--ro-bind", str(path), str(path)]
        args += self._mask_args(mounted)
        binds = [*self.writable, self.socket_dir]
        args += _dirs_for([*binds, self.seam.path], mounted)
        for path in binds:
            args += ["--bind", str(path), str(path)]
        args += ["--ro-bind", str(self.seam.path), str(self.seam.path)]
        # bubblewrap reports the pid before the mounts are done: the holder says "ready" once they are.
        sleep = shlex.join([*self._drop(), "/usr/bin/sleep", "infinity"])  # the holder needs no root either
        ready = f"{LOOK_ONLINE}; echo ready > /proc/self/fd/{ready_fd} && exec {sleep}"  # dash: no fd > 9 in >&N
        args += ["--chdir", str(self.home), "--info-fd", str(info_fd), "--", "/bin/sh", "-c", ready]
        return self.cgroup.join_argv(args)

    async def start(self) -> None:
        """Create the cgroup and the namespaces; return once processes can be entered into them."""
        await asyncio.to_thread(self._prepare)
        info_read, info_write = os.pipe()
        ready_read, ready_write = os.pipe()
        try:
            process = ManagedProcess(
                "sandbox",
                self.holder_argv(info_write, ready_write),
                env=self._env,
                pass_fds=(info_write, ready_write),
                terminate_grace=2.0,
                on_spawn=self._on_spawn,
                on_exit=self._on_exit,
            )
            process.start()
            self.holder = process
        finally:
            os.close(info_write)
            os.close(ready_write)
        try:
            async with asyncio.timeout(HOLDER_READY_TIMEOUT):
                info = await asyncio.to_thread(_read_all, info_read)
                ready = await asyncio.to_thread(os.read, ready_read, 64)
        except TimeoutError as exc:
            raise ProcessStartError(
                f"the sandbox of {self.name} did not come up within {HOLDER_READY_TIMEOUT:.0f} s"
            ) from exc
        finally:
            os.close(info_read)
            os.close(ready_read)
        try:
            if not ready.startswith(b"ready"):
                raise ValueError("the holder never said it was ready")
            self.holder_pid = int(json.loads(info)["child-pid"])
        except (ValueError, KeyError, TypeError) as exc:
            raise ProcessStartError(
                f"the sandbox of {self.name} failed to start", stderr_tail=process.output_tail()
            ) from exc

    def _prepare(self) -> None:
        for path in (*self.writable, self.socket_dir):
            path.mkdir(parents=True, exist_ok=True)
        self.socket_dir.chmod(0o700)
        give_to(self.uid, self.socket_dir, *self.writable)
        self._write_identity()
        self.cgroup.create()

    # -- entering -------------------------------------------------------------------------------------------
    def command(self, argv: Sequence[str]) -> list[str]:
        """``argv`` run inside the slot's namespaces and cgroup as the slot's uid."""
        if self.holder_pid is None:
            raise RuntimeError(f"the sandbox of {self.name} is not running")
        entered = [sandbox_tool("nsenter") or "nsenter", "-t", str(self.holder_pid), *ENTER, "--"]
        return self.cgroup.join_argv([*entered, *self._drop(), *argv])

    def script_command(self, argv: Sequence[str], uid: int) -> list[str]:
        """``argv`` as the script host: in the slot's mount, pid and uts namespaces and cgroup, but in network and ipc
        namespaces of its own (only ``lo``: neither Chromium's DevTools port nor the egress relay), in a mount
        namespace of its own where the slot's writable directories, its socket directory, ``/tmp`` and ``/dev/shm``
        are fresh empty tmpfs (never the profile, never the relays' sockets), as ``uid`` (not the browser's), from
        ``/tmp``. Root does the unsharing and mounting inside ``nsenter``; ``setpriv`` then drops everything.
        The channel and CDP descriptors the caller passes are inherited through every step (none closes fds)."""
        if self.holder_pid is None:
            raise RuntimeError(f"the sandbox of {self.name} is not running")
        mount = sandbox_tool("mount") or "mount"
        hide = [
            f"{mount} -t tmpfs -o mode=0755,size=64k hidden {shlex.quote(str(path))}"
            for path in self._hidden_from_scripts()
        ]
        hide += [
            f"{mount} -t tmpfs -o mode=1777,size={SCRIPT_TMP_SIZE} scratch {target}" for target in ("/tmp", "/dev/shm")
        ]
        drop = shlex.join(self._drop(uid))
        script = f'set -e; cd /; {"; ".join(hide)}; cd /tmp; exec {drop} "$@"'
        entered = [sandbox_tool("nsenter") or "nsenter", "-t", str(self.holder_pid), *SCRIPT_ENTER, "--"]
        unshare = [sandbox_tool("unshare") or "unshare", "--net", "--ipc", "--mount", "--propagation", "private", "--"]
        return self.cgroup.join_argv([*entered, *unshare, "/bin/sh", "-c", script, "scripthost", *argv])

    def _hidden_from_scripts(self) -> list[Path]:
        """What the script host must not see: every directory bound into the sandbox besides the system, the Python
        and the font cache, i.e. the slot's writable directories (the profile is one), its scratch directory and its
        seam directory (the egress socket). A new bind in :meth:`holder_argv` belongs here too."""
        return [*self.writable, self.socket_dir, self.seam.path]

    def script_environment(self, base: Mapping[str, str]) -> dict[str, str]:
        """The script host's environment: ``base`` with a home and TMPDIR in its own ``/tmp``."""
        return {**base, "HOME": "/tmp", "USER": "scripts", "LOGNAME": "scripts", "TMPDIR": "/tmp"}

    def _drop(self, uid: int | None = None) -> list[str]:
        """setpriv: the slot's uid and gid, no groups, no capabilities, and no way to regain any."""
        setpriv = sandbox_tool("setpriv") or "setpriv"
        uid = self.uid if uid is None else uid
        drop = [setpriv, "--reuid", str(uid), "--regid", str(uid), "--clear-groups"]
        return [*drop, "--no-new-privs", "--inh-caps=-all", "--bounding-set=-all", "--"]

    def environment(self, base: Mapping[str, str]) -> dict[str, str]:
        """The environment of a process inside: ``base`` with the slot user's home, and the sandbox's private
        ``/tmp`` as TMPDIR unless ``base`` names one (Chromium's is the slot's scratch dir, inside its disk cap)."""
        return {"TMPDIR": "/tmp", **base, "HOME": str(self.home), "USER": "slot", "LOGNAME": "slot"}

    # -- teardown -------------------------------------------------------------------------------------------
    async def aclose(self) -> None:
        """End the holder, and with it every process in the namespaces; remove the cgroup (shielded by callers)."""
        if self.holder is not None:
            if self.holder_pid is not None and self.holder.running:
                # SIGKILL the namespace's init first: the kernel then ends everything inside, and bubblewrap, its
                # parent and our child, reaps it and exits; nothing is left for PID 1 to reap later.
                self.holder.expect_exit()
                with contextlib.suppress(ProcessLookupError):
                    os.kill(self.holder_pid, signal.SIGKILL)
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(asyncio.shield(self.holder.died), HOLDER_EXIT_TIMEOUT)
            await self.holder.aclose()
        self.holder_pid = None
        await asyncio.to_thread(self.cgroup.remove)


def _read_all(fd: int) -> str:
    chunks: list[bytes] = []
    while chunk := os.read(fd, 65536):
        chunks.append(chunk)
    return b"".join(chunks).decode(errors="replace")
