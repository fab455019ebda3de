"""Who may reach a slot's live view: only the server, through a per-slot secret (spec §4.10, issue 7).

* x11vnc listens on a **Unix socket** (``-unixsock <dir>/<index>.sock -rfbport 0``), never on TCP, so no page
  and no local process can open the RFB stream on a port (x11vnc runs ``-nopw``).
* websockify keeps its loopback TCP port (one per slot, for the noVNC web files), reaches x11vnc with a
  ``unix_socket:`` target from its ``TokenFile`` plugin, and refuses every WebSocket that does not carry the
  slot's secret as ``?token=``. The secret lives only in the server's memory and in a 0600 token file.
* Both files are in a 0700 directory owned by the service user: ``<run_dir>/vnc``, or, when that path is too
  long for a Unix socket (108 bytes), ``/tmp/openbrowse-<instance>-vnc``. Debian's websockify 0.10 cannot
  listen on a Unix socket itself (no ``--unix-listen``), hence the token.
"""

from __future__ import annotations

import os
import secrets
import stat
from dataclasses import dataclass, field
from pathlib import Path

from openbrowse.slots.ledger import instance_id

__all__ = ["VncAccess", "vnc_socket_dir"]

_MAX_SOCKET_PATH = 100  # sun_path holds 108 bytes with the NUL; keep a margin for the file name


def vnc_socket_dir(run_dir: Path) -> Path:
    """The 0700 directory of the slots' x11vnc sockets and websockify token files (not created here)."""
    preferred = run_dir / "vnc"
    if len(str(preferred.resolve() / "999.sock")) <= _MAX_SOCKET_PATH:
        return preferred
    return Path("/tmp") / f"openbrowse-{instance_id(run_dir)}-vnc"


def _private_dir(path: Path, owner: int | None = None) -> None:
    """Create ``path`` as a 0700 directory of ours (or of the sandbox uid ``owner``), or refuse one that is a
    symlink or someone else's."""
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    info = path.lstat()
    if not stat.S_ISDIR(info.st_mode) or info.st_uid not in {os.geteuid(), owner}:
        raise PermissionError(f"{path} is not a directory owned by this user; refusing to put VNC sockets there")
    if stat.S_IMODE(info.st_mode) != 0o700:
        path.chmod(0o700)


@dataclass
class VncAccess:
    """The socket, token file and secret of one slot's live view (a new secret for every slot start)."""

    directory: Path
    index: int
    owner_uid: int | None = None
    """The sandbox uid that runs x11vnc and websockify (they must read the token file), or None."""
    secret: str = field(default_factory=lambda: secrets.token_hex(24))

    @property
    def socket_path(self) -> Path:
        return self.directory / f"{self.index}.sock"

    @property
    def token_path(self) -> Path:
        return self.directory / f"{self.index}.tokens"

    def write_token_file(self) -> None:
        """Create the private dir and write websockify's token file (0600) (blocking, tiny)."""
        _private_dir(self.directory, self.owner_uid)
        fd = os.open(self.token_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "w") as out:
            if self.owner_uid is not None:
                os.fchown(out.fileno(), self.owner_uid, self.owner_uid)
            out.write(f"{self.secret}: unix_socket:{self.socket_path}\n")

    def clear_socket(self) -> None:
        """Create the private dir and remove a socket a killed x11vnc left behind."""
        _private_dir(self.directory, self.owner_uid)
        self.socket_path.unlink(missing_ok=True)

    def remove(self) -> None:
        for path in (self.socket_path, self.token_path):
            path.unlink(missing_ok=True)
