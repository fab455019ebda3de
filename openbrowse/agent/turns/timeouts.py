"""The nested time budget (spec §10.8): each outer limit is strictly larger than everything inside it."""

from __future__ import annotations

from dataclasses import dataclass
from itertools import pairwise


@dataclass(frozen=True, slots=True)
class Timeouts:
    llm_call: float = 180.0
    sandbox_script: float = 300.0
    read_pages: float = 420.0
    action: float = 480.0
    step: float = 520.0
    http_fetch: float = 30.0

    def check(self) -> None:
        """Raise if the nesting is broken: an outer limit must never cut a well-behaved inner operation."""
        chain = [
            ("llm_call", self.llm_call),
            ("sandbox_script", self.sandbox_script),
            ("read_pages", self.read_pages),
            ("action", self.action),
            ("step", self.step),
        ]
        for (inner_name, inner), (outer_name, outer) in pairwise(chain):
            if not inner < outer:
                raise ValueError(f"timeout nesting broken: {inner_name} ({inner} s) must be < {outer_name} ({outer} s)")
        if not self.http_fetch < self.sandbox_script:
            raise ValueError("timeout nesting broken: http_fetch must be shorter than a sandbox script")


TIMEOUTS = Timeouts()
TIMEOUTS.check()


def dispatch_outlives_step(task_timeout: int) -> bool:
    """Whether a TASK_TIMEOUT leaves room for at least one full step (0 = no limit)."""
    return task_timeout == 0 or task_timeout > TIMEOUTS.step
