"""The session's CAPTCHA solver state (spec §11.6): the per-run spend ceiling and the failures per host."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from decimal import Decimal

from openbrowse.agent.captcha.capsolver import CapSolverSettings, SolveResult
from openbrowse.domain.money import format_usd
from openbrowse.shielding import run_shielded

__all__ = ["FAILURES_PER_HOST", "CaptchaSolver"]

FAILURES_PER_HOST = 2


class CaptchaSolver:
    """The session's solver: settings, this dispatch's spend, failures per host, and where spend is reported."""

    def __init__(self, settings: CapSolverSettings, on_spend: Callable[[Decimal], Awaitable[None]]) -> None:
        self.settings = settings
        self._on_spend = on_spend
        self.run_spend = Decimal(0)
        self._failures: dict[str, int] = {}

    def new_turn(self) -> None:
        """A new dispatch: its own allowance (spend so far is already in the session's carried total)."""
        self.run_spend = Decimal(0)

    def refusal(self, host: str) -> str | None:
        ceiling = self.settings.max_cost_usd
        if ceiling > 0 and self.run_spend >= ceiling:
            return (
                f"CAPTCHA spend in this run reached the ${format_usd(ceiling)} ceiling (CAPTCHA_MAX_COST_USD); "
                "report the block instead of retrying."
            )
        if self._failures.get(host, 0) >= FAILURES_PER_HOST:
            return f"Two CAPTCHA solves on {host} already failed; report the block instead of retrying."
        return None

    async def record(self, host: str, result: SolveResult) -> None:
        self._failures[host] = 0 if result.solved else self._failures.get(host, 0) + 1
        if result.cost > 0:
            self.run_spend += result.cost
            await run_shielded(self._on_spend(result.cost))
