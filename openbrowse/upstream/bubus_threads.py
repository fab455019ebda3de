"""browser-use's event bus (bubus), made to keep each engine thread's buses to that thread.

Upstream: bubus 1.5.x, ``bubus.service``: the module function ``_get_global_lock()`` (returning a
``ReentrantLock``), called by every handler run, and the class attribute ``EventBus.all_instances`` (a
``weakref.WeakSet`` that ``EventBus.__init__`` adds to and whose iteration bubus uses to step other buses).

bubus keeps two process-wide things that assume one event loop:

* one global re-entrant lock (an ``asyncio.Semaphore``) serialising handlers of every ``EventBus``, which it
  swaps for a new one whenever it is used from another loop; two engine threads would keep swapping it under
  each other, and a waiter of one loop could end up on the other loop's semaphore;
* ``EventBus.all_instances``, every live bus: while a handler awaits an event, bubus steps the queues of *all*
  buses, and it looks buses up there by name; from another thread that would run a foreign loop's queue here.

With each engine on its own thread and loop (``engine_host.py``), every thread gets its own lock, and a thread
iterating ``all_instances`` sees only the buses it created. Within one thread bubus behaves as before.
"""

from __future__ import annotations

import importlib
import threading
import weakref
from collections.abc import Iterator
from typing import Any

_per_thread = threading.local()
_OWNER = "_openbrowse_thread"


class ThreadBuses(weakref.WeakSet[Any]):
    """A WeakSet of buses whose iteration yields only the calling thread's buses (a snapshot: safe while another
    thread adds or drops one)."""

    def add(self, item: Any) -> None:
        if not hasattr(item, _OWNER):
            setattr(item, _OWNER, threading.get_ident())
        super().add(item)

    def __iter__(self) -> Iterator[Any]:
        me = threading.get_ident()
        refs: set[weakref.ref[Any]] = self.data.copy()  # type: ignore[attr-defined]
        for ref in refs:
            bus = ref()
            if bus is not None and getattr(bus, _OWNER, me) == me:
                yield bus


def keep_event_buses_per_thread() -> None:
    """Install the per-thread lock and bus registry in bubus (idempotent; call once browser-use is imported)."""
    service: Any = importlib.import_module("bubus.service")
    if getattr(service._get_global_lock, "_openbrowse_per_thread", False):
        return
    lock_type = service.ReentrantLock

    def thread_lock() -> Any:
        lock = getattr(_per_thread, "lock", None)
        if lock is None:
            lock = _per_thread.lock = lock_type()
        return lock

    thread_lock._openbrowse_per_thread = True  # type: ignore[attr-defined]
    buses = ThreadBuses()
    for bus in list(service.EventBus.all_instances):
        buses.add(bus)
    service.EventBus.all_instances = buses
    service._get_global_lock = thread_lock
