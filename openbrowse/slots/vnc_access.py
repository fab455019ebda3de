"""Who may reach a slot's live view: only the server, through a per-slot secret (spec §4.10, issue 7).

* x11vnc listens on a **Unix socket** (``-unixsock <dir>/<index>.sock -rfbport 0``), never on TCP, so no page
  and no local process can open the RFB stream on a port (x11vnc runs ``-nopw``).
* websockify keeps its loopback TCP port (one per slot, for the noVNC web files), reaches x11vnc with a
  ``unix_socket:`` target from its ``TokenFile`` plugin, and refuses every WebSocket that does not carry the
  slot's secret as ``?token=``. The secret lives only in the server's memory and in a 0600 token file.
* Unsandboxed, both files are in a 0700 directory owned by the service user: ``<run_dir>/vnc``, or, when that
  path is too long for a Unix socket (108 bytes), ``/tmp/openbrowse-<instance>-vnc``. In a sandbox, x11vnc's
  socket is in the slot's scratch dir (x11vnc and websockify both run as the slot's uid, and the server never
  touches that socket), and the token file is in the slot's read-only seam dir (:mod:`.seam`), written by the
  server through the directory's descriptor. Debian's websockify 0.10 cannot listen on a Unix socket itself (no
  ``--unix-listen``), hence the token.
"""

from __future__ import annotations

import os
import secrets
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from openbrowse.slots.ledger import instance_id

if TYPE_CHECKING:
    from openbrowse.slots.seam import SeamDir

__all__ = ["VncAccess", "vnc_socket_dir"]

_MAX_SOCKET_PATH = 100  # sun_path holds 108 bytes with the NUL; keep a margin for the file name


def vnc_socket_dir(run_dir: Path) -> Path:
    """The 0700 directory of the slots' x11vnc sockets and websockify token files (not created here)."""
    preferred = run_dir / "vnc"
    if len(str(preferred.resolve() / "999.sock")) <= _MAX_SOCKET_PATH:
        return preferred
    return Path("/tmp") / f"openbrowse-{instance_id(run_dir)}-vnc"


def _private_dir(path: Path) -> None:
    """Create ``path`` as a 0700 directory of ours, or refuse one that is a symlink or someone else's."""
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    info = path.lstat()
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.geteuid():
        raise PermissionError(f"{path} is not a directory owned by this user; refusing to put VNC sockets there")
    if stat.S_IMODE(info.st_mode) != 0o700:
        path.chmod(0o700)


@dataclass
class VncAccess:
    """The socket, token file and secret of one slot's live view (a new secret for every slot start)."""

    directory: Path
    """Where x11vnc's socket goes: the private dir unsandboxed, the slot's scratch dir in a sandbox."""
    index: int
    seam: SeamDir | None = None
    """A sandboxed slot's seam dir: the token file goes there, readable by the slot's group (websockify)."""
    secret: str = field(default_factory=lambda: secrets.token_hex(24))

    @property
    def socket_path(self) -> Path:
        return self.directory / f"{self.index}.sock"

    @property
    def token_name(self) -> str:
        return f"{self.index}.tokens"

    @property
    def token_path(self) -> Path:
        return (self.seam.path if self.seam is not None else self.directory) / self.token_name

    def write_token_file(self) -> None:
        """Write websockify's token file (blocking, tiny: call through ``asyncio.to_thread``). Never opens anything
        but a regular file of ours: ``O_NOFOLLOW | O_NONBLOCK`` and a type check on the descriptor."""
        line = f"{self.secret}: unix_socket:{self.socket_path}\n".encode()
        if self.seam is not None:
            self.seam.write_file(self.token_name, line, mode=0o640, group=True)
            return
        _private_dir(self.directory)
        flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
        fd = os.open(self.token_path, flags, 0o600)
        with os.fdopen(fd, "wb") as out:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise OSError(f"{self.token_path} is not a regular file")
            out.write(line)

    def clear_socket(self) -> None:
        """Remove a socket a killed x11vnc left behind (unlinking never follows the name; blocking, tiny)."""
        if self.seam is None:
            _private_dir(self.directory)
        self.socket_path.unlink(missing_ok=True)

    def remove(self) -> None:
        self.socket_path.unlink(missing_ok=True)
        if self.seam is not None:
            self.seam.unlink(self.token_name)
        else:
            self.token_path.unlink(missing_ok=True)
