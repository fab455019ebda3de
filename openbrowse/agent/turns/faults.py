"""Why a turn stops before its agent does: the cost cap fired, or the model provider kept failing.

The runner raises these from its step-end hook; the driver catches them and ends the turn with the matching
outcome. ``root_cause`` unwraps a ``ProviderGaveUp`` to the provider error the outcome is classified from.
"""

from __future__ import annotations

from decimal import Decimal

from openbrowse.agent.replies.chat import AgentCallLog
from openbrowse.domain.failures import FailureKind
from openbrowse.domain.money import format_usd
from openbrowse.llm.failures import classify, is_provider_failure

PERSISTENT_PROVIDER_FAILURES = 2
UNUSABLE_REPLIES = 1
"""Steps abandoned with unusable replies before the turn ends; each step already made up to three calls."""
NON_RETRYABLE_STATUSES = frozenset({400, 401, 403, 404, 422})


class BudgetExceeded(Exception):
    """The cost cap fired at the end of a step."""

    def __init__(self, total: Decimal, ceiling: Decimal) -> None:
        super().__init__(f"Cost ${format_usd(total)} exceeded budget ${format_usd(ceiling)}")
        self.total = total
        self.ceiling = ceiling


class ProviderGaveUp(Exception):
    """The model provider kept failing; the original error is the ``__cause__``."""


def root_cause(exc: BaseException) -> BaseException:
    """The provider error a ``ProviderGaveUp`` stands for; any other exception itself."""
    if isinstance(exc, ProviderGaveUp) and exc.__cause__ is not None:
        return exc.__cause__
    return exc


def raise_if_provider_gave_up(log: AgentCallLog) -> None:
    """End the turn early on a persistent provider fault or replies that stay unusable.

    browser-use would otherwise retry failing steps until it runs out, and end "out of steps" with the
    cause lost; the SDK has already retried each call, so two failed steps in a row count as persistent.
    """
    last = log.last_error
    if last is None:
        return
    failure = classify(last)
    streak = log.consecutive_errors
    if is_provider_failure(last):
        if streak >= PERSISTENT_PROVIDER_FAILURES or failure.status_code in NON_RETRYABLE_STATUSES:
            raise ProviderGaveUp(f"The model provider kept failing: {last}") from last
    elif failure.kind is FailureKind.INVALID_OUTPUT and streak >= UNUSABLE_REPLIES:
        raise ProviderGaveUp(f"The model's replies stayed unusable: {last}") from last
