"""When lean state arms (spec §10.5): only after steps whose every executed action was store/file/sandbox work."""

from __future__ import annotations

import pytest

from openbrowse.agent.lean_state import LEAN_ACTIONS, LeanState
from openbrowse.agent.turns.steps import CATEGORIES


@pytest.mark.parametrize(
    ("executed", "url", "armed"),
    [
        (["remember"], "https://a/", True),
        (["add_item", "write_file", "run_code_file", "read_pages", "http_fetch"], "https://a/", True),
        (["remember", "click"], "https://a/", False),
        (["navigate"], "https://a/", False),
        ([], "https://a/", False),
        (["remember"], None, False),
    ],
)
def test_arming(executed: list[str], url: str | None, armed: bool) -> None:
    lean = LeanState()
    lean.after_step(executed, url)
    assert lean.armed is armed


def test_a_later_step_or_a_new_turn_disarms() -> None:
    lean = LeanState()
    lean.after_step(["recall"], "https://a/")
    lean.after_step(["scroll"], "https://a/")
    assert not lean.armed
    lean.after_step(["recall"], "https://a/")
    lean.disarm()
    assert not lean.armed


def test_every_store_action_is_lean() -> None:
    assert CATEGORIES["schema"] <= LEAN_ACTIONS
