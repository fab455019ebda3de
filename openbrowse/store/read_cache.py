"""A read cache that is never stale: a value is kept only if no write overlapped the read that produced it.

``GET /v3/sessions/{id}`` is the API's hot path, and each SQLite read is a hop to the connection's thread and
back; under load, waiting for the GIL on both hops costs more than the query (issue 11). One repo instance is the
only writer of its table, so it can tell the cache about every write:

* :meth:`ReadCache.writing` wraps each write: it drops the key's entry first and counts the write in flight
  until the transaction has ended (committed or rolled back);
* a reader takes a :meth:`ReadCache.ticket` before its query and :meth:`ReadCache.offer` s the result after it;
  the result is kept only if no write began or ended in between and none is in flight.

A query that overlapped a write may have seen the state before it, so it is never kept; one that overlapped
none saw the last committed state, which stays current until the next write begins and drops it. A hit is
therefore what a query would have returned at that moment. Writes are rare next to reads, so the tickets and
the in-flight count are global (a write anywhere costs a miss, never a wrong answer), and everything runs on one
event loop, so no lock is needed.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Hashable, Iterator
from contextlib import contextmanager
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class ReadCache(Generic[K, V]):
    """At most ``capacity`` entries, the least recently used dropped first."""

    def __init__(self, capacity: int) -> None:
        if capacity < 1:
            raise ValueError("capacity must be at least 1")
        self._capacity = capacity
        self._entries: OrderedDict[K, V] = OrderedDict()
        self._epoch = 0
        self._writes_in_flight = 0

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, key: K) -> V | None:
        value = self._entries.get(key)
        if value is not None:
            self._entries.move_to_end(key)
        return value

    def ticket(self) -> int:
        """Take before the query whose result will be offered."""
        return self._epoch

    def offer(self, key: K, value: V, ticket: int) -> bool:
        """Keep ``value`` if no write overlapped its query (began or ended after ``ticket``, or is still going)."""
        if ticket != self._epoch or self._writes_in_flight:
            return False
        self._entries[key] = value
        self._entries.move_to_end(key)
        while len(self._entries) > self._capacity:
            self._entries.popitem(last=False)
        return True

    @contextmanager
    def writing(self, key: K) -> Iterator[None]:
        """Wrap a write of ``key``'s row, from before the transaction begins until it has ended."""
        self._entries.pop(key, None)
        self._epoch += 1
        self._writes_in_flight += 1
        try:
            yield
        finally:
            self._writes_in_flight -= 1
            self._epoch += 1

    def forget(self, key: K) -> None:
        """Another process wrote ``key``'s row (it committed): drop it, and refuse what queries in flight offer."""
        self._entries.pop(key, None)
        self._epoch += 1

    def clear(self) -> None:
        """Writes may have been missed: drop everything, and refuse what queries in flight offer."""
        self._entries.clear()
        self._epoch += 1
