"""The mark of suites that test the sandbox itself: skipped on a developer's machine without one, **failed** on
the CI machine (``CI`` set), where a missing sandbox would otherwise pass the security suites by skipping them."""

from __future__ import annotations

import pytest

from openbrowse.slots.sandbox import sandbox_problem
from tests.support.ci_gate import required

__all__ = ["CI_SANDBOX_MISSING", "needs_sandbox"]

CI_SANDBOX_MISSING = "The sandbox is missing on the CI machine, where its suites must run"


def needs_sandbox() -> pytest.MarkDecorator:
    """``pytestmark`` entry: nothing when the sandbox works; else a skip, or on CI a failure naming the reason."""
    problem = sandbox_problem()
    return required(None if problem is None else f"no sandbox here: {problem}")
