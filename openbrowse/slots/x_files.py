"""An X display's files in ``/tmp``: the lock file and the Unix socket, whether they are live, and their removal.

Xvfb removes both when it exits on a signal it handles. A SIGKILLed Xvfb (a teardown past its grace period, a
crashed or killed service whose leftovers the next start kills) leaves the socket behind, and the lock file when
it wrote one (started with ``-displayfd`` it writes none). A dead socket never stops an X server from taking the
display, but the files pile up in ``/tmp`` and read as displays in use to tools that only look for them.
"""

from __future__ import annotations

import logging
import os
import socket
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from openbrowse.slots.layout import SlotLayout

__all__ = ["lock_owner", "remove_dead_x_files", "socket_answers", "x_display_taken"]

logger = logging.getLogger(__name__)


def lock_owner(layout: SlotLayout) -> int | None:
    """The live pid in the display's X lock file, or None (no lock, unreadable, or its writer is gone)."""
    pid = _lock_pid(layout)
    if pid is None:
        return None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return None  # a stale lock: Xvfb removes it by itself when it takes the display
    except PermissionError:
        return pid  # alive, another user's
    return pid


def _lock_pid(layout: SlotLayout) -> int | None:
    try:
        return int(layout.x_lock_path.read_text().strip())
    except (OSError, ValueError):
        return None


def socket_answers(layout: SlotLayout) -> bool:
    """True when an X server accepts connections on the display's Unix socket."""
    path = layout.x_socket_path
    if not path.exists():
        return False
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
        probe.settimeout(1.0)
        try:
            probe.connect(str(path))
        except OSError:
            return False  # a dead socket file: an X server taking the display replaces it
    return True


def x_display_taken(layout: SlotLayout) -> bool:
    return lock_owner(layout) is not None or socket_answers(layout)


def remove_dead_x_files(layout: SlotLayout, xvfb_pid: int) -> list[str]:
    """Remove what our Xvfb ``xvfb_pid`` (already gone) left of the display; returns the paths removed.

    The lock file goes only when it holds ``xvfb_pid``: any other pid is another X server's, or a later owner's.
    The socket goes only when no live process holds the lock and nothing answers on it, so a display some other X
    server has taken since is never touched.
    """
    removed: list[str] = []
    if _lock_pid(layout) == xvfb_pid and _unlink(layout.x_lock_path):
        removed.append(str(layout.x_lock_path))
    if not x_display_taken(layout) and _unlink(layout.x_socket_path):
        removed.append(str(layout.x_socket_path))
    return removed


def _unlink(path: os.PathLike[str]) -> bool:
    try:
        os.unlink(path)
    except FileNotFoundError:
        return False
    except OSError as exc:  # e.g. PermissionError for a non-root service: report, never fail a stop or a start
        logger.warning("Could not remove %s left by our Xvfb: %s", os.fspath(path), exc)
        return False
    return True
