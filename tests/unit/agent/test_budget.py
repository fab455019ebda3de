"""The cost cap rule (spec §16.2)."""

from __future__ import annotations

from decimal import Decimal as D

from openbrowse.agent.turns.budget import TurnSpend, over_budget


def test_no_ceiling_never_stops() -> None:
    assert not over_budget(D("1000"), None, TurnSpend(carried=D(0)))


def test_reaching_the_ceiling_stops() -> None:
    spend = TurnSpend(carried=D(0))
    spend.record_step(D("1.00"))
    assert over_budget(D("1.00"), D("1.00"), spend)


def test_stops_when_the_rest_cannot_pay_an_average_step() -> None:
    spend = TurnSpend(carried=D(0))
    spend.record_step(D("0.30"))
    spend.record_step(D("0.60"))
    assert spend.average_step_cost == D("0.30")
    assert not over_budget(D("0.60"), D("0.90"), spend)  # remaining 0.30 pays one more average step
    assert over_budget(D("0.61"), D("0.90"), spend)


def test_carried_spend_counts_towards_the_cap_but_not_the_average() -> None:
    spend = TurnSpend(carried=D("5"))
    spend.record_step(D("5.10"))
    assert spend.average_step_cost == D("0.10")
    assert not over_budget(D("5.10"), D("6"), spend)
    assert over_budget(D("5.95"), D("6"), spend)


def test_free_steps_do_not_arm_the_average_rule() -> None:
    spend = TurnSpend(carried=D(0))
    spend.record_step(D(0))
    assert spend.average_step_cost is None
    assert not over_budget(D(0), D("0.01"), spend)
