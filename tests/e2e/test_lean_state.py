"""Lean state (spec §10.5) in a real run: after a ``remember`` step the next request carries a stub state, and
an element index from an earlier full state still clicks the right element."""

from __future__ import annotations

from typing import Any

import pytest

from tests.e2e.agent_support import create, data_of, messages, token, wait_until_status
from tests.fakes.llm_request import LLMRequest, find_elements, find_index
from tests.fakes.llm_script import agent_step, done
from tests.fakes.llm_server import FakeProvider
from tests.fakes.site import FixtureSites
from tests.support.server import ServerProcess

pytestmark = [pytest.mark.e2e, pytest.mark.display, pytest.mark.timeout(300)]

IMAGE_PART_TYPES = {"image", "input_image", "image_url"}


def image_parts(value: Any) -> int:
    """Image content parts anywhere in a request body (Anthropic, Responses or Chat Completions)."""
    if isinstance(value, dict):
        own = 1 if value.get("type") in IMAGE_PART_TYPES else 0
        return own + sum(image_parts(item) for item in value.values())
    if isinstance(value, list):
        return sum(image_parts(item) for item in value)
    return 0


@pytest.mark.parametrize("model", ["claude-sonnet-5", "gpt-5.6-terra"])
def test_index_from_an_earlier_state_clicks_on_a_lean_step(
    agent_server: ServerProcess, fake: FakeProvider, site: FixtureSites, model: str
) -> None:
    marker = token("LEAN")
    seen: dict[str, int] = {}

    def wait_and_note_index(request: LLMRequest) -> dict[str, Any]:
        seen["blue"] = find_index(request, "Blue Widget")
        return agent_step({"wait": {"seconds": 1}}, next="Let the shop settle.")

    def click_noted_index(request: LLMRequest) -> dict[str, Any]:
        return agent_step({"click": {"index": seen["blue"]}}, next="Open the Blue Widget by its earlier index.")

    def finish(request: LLMRequest) -> dict[str, Any]:
        assert "Add to cart" in (request.browser_state or "")
        return done("Opened the Blue Widget page.")

    fake.script(
        marker,
        [
            wait_and_note_index,
            agent_step({"remember": {"key": "product", "value": "Blue Widget"}}, next="Note the product."),
            click_noted_index,
            finish,
        ],
        when=lambda r: r.is_agent_step,
    )
    session = create(agent_server, task=f"{marker} Open {site.url}/ and open the Blue Widget.", model=model)
    finished = wait_until_status(agent_server, session["id"], {"stopped", "error", "idle"}, timeout=200)

    assert finished["status"] == "stopped" and finished["isTaskSuccessful"] is True, finished["lastStepSummary"]
    assert finished["output"] == "Opened the Blue Widget page."
    calls = [r for r in fake.requests_matching(marker) if r.is_agent_step]
    assert len(calls) == 4
    full, lean, after = calls[1], calls[2], calls[3]
    # the remember step itself saw a full state; the step after it a stub
    assert image_parts(full.body) == 1 and find_elements(full)
    assert image_parts(lean.body) == 0
    assert find_elements(lean) == []
    state = lean.browser_state or ""
    assert "CODE MODE" in state and f"{site.url}/" in state and "indices remain valid" in state
    # the click by the old index worked: the step after it sees the product page in full
    assert image_parts(after.body) == 1 and "Add to cart" in (after.browser_state or "")
    steps = [data_of(m) for m in messages(agent_server, session["id"]) if "step" in data_of(m)]
    assert [s["action"] for s in steps] == ["wait", "remember", "click", "done"]
    assert all("errorFull" not in s for s in steps), steps
