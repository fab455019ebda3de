"""The process-wide descriptor budget: taken and given back, refused when spent."""

from __future__ import annotations

import resource

from openbrowse.network.fd_budget import FdBudget, default_budget


def test_a_spent_budget_refuses_until_descriptors_are_given_back() -> None:
    budget = FdBudget(10)
    assert budget.try_acquire(6, "a gate")
    assert not budget.try_acquire(6, "a gate")
    assert budget.refused == 1
    budget.release(6)
    assert budget.try_acquire(6, "a gate") and budget.used == 6


def test_the_default_leaves_room_for_the_api() -> None:
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    assert 64 <= default_budget() <= max(64, soft // 2)


def test_room_kept_free_for_the_other_end_of_a_connection() -> None:
    """A bridge's upstream is a gate connection taking its own share: a bridge without room for it is refused."""
    budget = FdBudget(10)
    assert not budget.try_acquire(2, "a bridge", keep_free=9)
    assert budget.try_acquire(2, "a bridge", keep_free=8) and budget.used == 2
