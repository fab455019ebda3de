"""glibc malloc tuning for a long-running server whose runs each work on a thread of their own.

glibc gives a thread that allocates while another holds the main arena an arena of its own (up to eight per
CPU), and keeps freed memory in every arena for reuse. Each run's engine thread (``sessions/engine_host.py``)
allocates megabytes of browser-use models, so without a cap every run could leave a mostly empty 64 MiB arena
mapped. The server caps the arenas at start-up and hands freed pages back to the kernel after each run.
Both are no-ops where the C library is not glibc.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import logging

logger = logging.getLogger(__name__)

M_ARENA_MAX = -8
"""``mallopt`` parameter number from glibc's malloc.h."""
ARENAS = 2
"""The main arena plus one shared by every other thread: the server's threads mostly wait, so they rarely
contend for it."""


@functools.cache
def _libc() -> ctypes.CDLL | None:
    name = ctypes.util.find_library("c")
    if name is None:
        return None
    try:
        libc = ctypes.CDLL(name)
        libc.mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
        libc.malloc_trim.argtypes = [ctypes.c_size_t]
    except (OSError, AttributeError):
        return None
    return libc


def limit_malloc_arenas(arenas: int = ARENAS) -> bool:
    """Cap glibc's malloc arenas (call early, before threads start allocating). True if it took effect."""
    libc = _libc()
    if libc is None:
        return False
    return bool(libc.mallopt(M_ARENA_MAX, arenas))


def trim_malloc() -> bool:
    """Return free memory at the top of every arena to the kernel (blocking, a few ms: run it in a thread)."""
    libc = _libc()
    if libc is None:
        return False
    return bool(libc.malloc_trim(0))
