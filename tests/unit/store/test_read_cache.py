"""ReadCache keeps a read only if no write overlapped it, so a hit always equals a fresh read."""

from __future__ import annotations

import pytest

from openbrowse.store.read_cache import ReadCache


def test_a_read_that_overlapped_no_write_is_kept() -> None:
    cache: ReadCache[str, int] = ReadCache(4)
    ticket = cache.ticket()
    assert cache.offer("a", 1, ticket)
    assert cache.get("a") == 1


def test_a_write_drops_the_entry_before_it_begins() -> None:
    cache: ReadCache[str, int] = ReadCache(4)
    cache.offer("a", 1, cache.ticket())
    with cache.writing("a"):
        assert cache.get("a") is None
    assert cache.get("a") is None


def test_a_read_begun_before_a_write_is_not_kept() -> None:
    cache: ReadCache[str, int] = ReadCache(4)
    ticket = cache.ticket()
    with cache.writing("a"):
        pass
    assert not cache.offer("a", 1, ticket)  # it may have seen the row before the write
    assert cache.get("a") is None


def test_a_read_that_ends_while_a_write_is_in_flight_is_not_kept() -> None:
    """The write may have committed while its task has not yet resumed: the read may hold either state."""
    cache: ReadCache[str, int] = ReadCache(4)
    with cache.writing("a"):
        ticket = cache.ticket()
        assert not cache.offer("a", 1, ticket)
    assert cache.get("a") is None


def test_a_read_begun_during_a_write_and_offered_after_it_is_not_kept() -> None:
    cache: ReadCache[str, int] = ReadCache(4)
    with cache.writing("a"):
        ticket = cache.ticket()
    assert not cache.offer("a", 1, ticket)


def test_a_read_begun_after_every_write_ended_is_kept() -> None:
    cache: ReadCache[str, int] = ReadCache(4)
    with cache.writing("a"):
        pass
    assert cache.offer("a", 2, cache.ticket())
    assert cache.get("a") == 2


def test_a_failed_write_still_ends() -> None:
    cache: ReadCache[str, int] = ReadCache(4)
    with pytest.raises(RuntimeError), cache.writing("a"):
        raise RuntimeError("rolled back")
    assert cache.offer("a", 1, cache.ticket())


def test_a_write_of_another_key_costs_a_miss_never_a_stale_entry() -> None:
    cache: ReadCache[str, int] = ReadCache(4)
    cache.offer("a", 1, cache.ticket())
    ticket = cache.ticket()
    with cache.writing("b"):
        pass
    assert cache.get("a") == 1  # untouched
    assert not cache.offer("c", 3, ticket)


def test_the_least_recently_used_entry_goes_first() -> None:
    cache: ReadCache[str, int] = ReadCache(2)
    cache.offer("a", 1, cache.ticket())
    cache.offer("b", 2, cache.ticket())
    assert cache.get("a") == 1
    cache.offer("c", 3, cache.ticket())
    assert len(cache) == 2
    assert cache.get("b") is None
    assert (cache.get("a"), cache.get("c")) == (1, 3)


def test_capacity_must_be_positive() -> None:
    with pytest.raises(ValueError, match="capacity"):
        ReadCache(0)
