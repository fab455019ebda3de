"""The cost cap (spec §16.2), checked at the end of every step against the ceiling read fresh from the row."""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal

EPSILON = Decimal("1e-9")


@dataclass(slots=True)
class TurnSpend:
    """Spend of the current turn, step by step. Carried spend counts towards the cap but not the average."""

    carried: Decimal
    step_costs: list[Decimal] = field(default_factory=list)

    def record_step(self, total_now: Decimal) -> None:
        """Record the step that just ended, given the session's total spend now."""
        spent_before = self.carried + sum(self.step_costs, Decimal(0))
        self.step_costs.append(max(Decimal(0), total_now - spent_before))

    @property
    def average_step_cost(self) -> Decimal | None:
        costly = [cost for cost in self.step_costs if cost > 0]
        if not costly:
            return None
        return sum(self.step_costs, Decimal(0)) / len(self.step_costs)


def over_budget(total: Decimal, ceiling: Decimal | None, spend: TurnSpend) -> bool:
    """Stop when the total reached the ceiling, or when what remains cannot pay for an average step."""
    if ceiling is None:
        return False
    if total >= ceiling:
        return True
    average = spend.average_step_cost
    if average is None:
        return False
    return ceiling - total + EPSILON < average
