"""Hands freed memory back to the kernel after each run (glibc ``malloc_trim``).

A run's engine frees megabytes of browser-use models when it closes; glibc keeps freed pages for reuse, so a
long-running server would hold the high-water mark of its busiest run. A no-op where the C library is not glibc.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import logging

logger = logging.getLogger(__name__)


@functools.cache
def _libc() -> ctypes.CDLL | None:
    name = ctypes.util.find_library("c")
    if name is None:
        return None
    try:
        libc = ctypes.CDLL(name)
        libc.malloc_trim.argtypes = [ctypes.c_size_t]
    except (OSError, AttributeError):
        return None
    return libc


def trim_malloc() -> bool:
    """Return free memory to the kernel (blocking, a few ms: run it in a thread). True if any was returned."""
    libc = _libc()
    if libc is None:
        return False
    return bool(libc.malloc_trim(0))
