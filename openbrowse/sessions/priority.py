"""Lower the CPU priority of the calling thread only (Linux nice values are per thread).

On two CPUs shared with Chromium, the API thread spent most of a busy window waiting for a CPU while the agent's
thread ran (issue 11). A higher nice value on each engine thread lets the kernel run the API first; threads the
engine thread starts (its executor's) inherit it. Raising one's own nice value needs no privilege; lowering it
again would, so it is only ever raised, relative to the thread's current value.
"""

from __future__ import annotations

import logging
import os
import threading

logger = logging.getLogger(__name__)

MAX_NICE = 19


def nicer_by(current: int, increment: int) -> int:
    """The nice value ``increment`` above ``current``, within Linux's range (never below ``current``)."""
    return max(current, min(MAX_NICE, current + max(0, increment)))


def lower_this_thread(increment: int) -> int | None:
    """Raise the calling thread's nice value by ``increment``; the new value, or None if unchanged/unsupported."""
    if increment <= 0:
        return None
    tid = threading.get_native_id()
    try:
        current = os.getpriority(os.PRIO_PROCESS, tid)
        wanted = nicer_by(current, increment)
        if wanted == current:
            return None
        os.setpriority(os.PRIO_PROCESS, tid, wanted)
    except (AttributeError, OSError) as exc:
        logger.warning("Could not lower the priority of thread %s: %s", threading.current_thread().name, exc)
        return None
    return wanted
