"""The queue's time estimate (spec §21.2): one median turn for each round of slots ahead of the caller."""

from __future__ import annotations

from openbrowse.sessions.admission import queue_eta


def test_no_finished_turn_means_no_estimate() -> None:
    assert queue_eta(3, [], slots=2) is None


def test_callers_within_the_first_round_wait_one_median_turn() -> None:
    assert queue_eta(1, [10.0, 30.0, 20.0], slots=2) == 20
    assert queue_eta(2, [10.0, 30.0, 20.0], slots=2) == 20


def test_each_further_round_of_slots_adds_a_median_turn() -> None:
    assert queue_eta(3, [12.0], slots=2) == 24
    assert queue_eta(5, [12.0], slots=1) == 60


def test_zero_slots_counts_as_one() -> None:
    assert queue_eta(2, [7.0], slots=0) == 14
