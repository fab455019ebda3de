"""Every malformed-reply fault of the fake provider, for Anthropic and OpenAI models, through a real run.

Each case either ends in a successful run (the reply was coerced or repaired by a correction) or ends
``invalid_output`` — and never spends more than six LLM calls on the faulty step (spec §10.6). The call count
comes from the fake provider's request log.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

from tests.e2e.agent_support import create, data_of, messages, token, wait_until_status
from tests.e2e.servers import agent_env, server_fixture
from tests.fakes.llm_request import LLMRequest
from tests.fakes.llm_script import (
    Fault,
    Reply,
    ReplyLike,
    action_as_json_string,
    action_as_top_level_keys,
    action_in_thinking_block,
    action_leaked,
    agent_step,
    blank_cards,
    done,
    list_argument_as_string,
    missing_action,
    single_action_object,
    split_tool_calls,
    structured,
)
from tests.fakes.llm_server import FakeProvider
from tests.fakes.site import FixtureSites
from tests.support.server import ServerProcess

pytestmark = [pytest.mark.e2e, pytest.mark.display, pytest.mark.timeout(900)]

MODELS = {"anthropic": "claude-sonnet-5", "openai": "gpt-5.6-terra"}
MAX_CALLS_PER_STEP = 6
ANSWER = "Repaired and done."


def _navigate(url: str) -> dict[str, Any]:
    return agent_step({"navigate": {"url": url, "new_tab": False}}, next="Open the shop.")


def _done_with_files() -> dict[str, Any]:
    return agent_step({"done": {"text": ANSWER, "success": True, "files_to_display": []}}, next="Finish.")


@dataclass(frozen=True)
class Case:
    """``first(url)`` is the faulty reply of step 1; ``repeat`` makes it persistent. ``coerced``: repaired
    without a correction; ``correction``: text the second request must carry; ``calls``: agent calls of the
    run per provider (``None``: same for both)."""

    first: Callable[[str], ReplyLike]
    ok: bool
    calls: int | dict[str, int]
    repeat: bool = False
    coerced: bool = False
    correction: str | None = None

    def expected_calls(self, provider: str) -> int:
        return self.calls if isinstance(self.calls, int) else self.calls[provider]


CASES: dict[str, Case] = {
    # coerced before validation: one call for the navigate step, one for done
    "action_json_string": Case(lambda url: action_as_json_string(_navigate(url)), True, 2, coerced=True),
    "single_action_object": Case(lambda url: single_action_object(_navigate(url)), True, 2, coerced=True),
    "leak_into_memory": Case(lambda url: action_leaked(_navigate(url), "memory"), True, 2, coerced=True),
    "leak_into_next_goal": Case(lambda url: action_leaked(_navigate(url), "next_goal"), True, 2, coerced=True),
    "leak_into_thinking": Case(lambda url: action_leaked(_navigate(url), "thinking"), True, 2, coerced=True),
    "top_level_keys": Case(lambda url: action_as_top_level_keys(_navigate(url)), True, 2, coerced=True),
    "parallel_tool_calls": Case(lambda url: split_tool_calls(_navigate(url)), True, 2, coerced=True),
    "list_argument_as_string": Case(lambda _: list_argument_as_string(_done_with_files()), True, 1),
    # Anthropic recovers the thinking block; OpenAI gets a correction and answers done
    "thinking_block_leak": Case(
        lambda url: action_in_thinking_block(_navigate(url)), True, {"anthropic": 2, "openai": 2}
    ),
    # repaired by one correction naming the defect (the corrected reply is the default done)
    "missing_action_once": Case(lambda url: missing_action(_navigate(url)), True, 2, correction="single tool call"),
    "mistyped_argument_once": Case(
        lambda url: agent_step({"navigate": {"url": url, "new_tab": "sometimes"}}),
        True,
        2,
        correction="Argument `new_tab` of `navigate` must be a boolean",
    ),
    "unknown_action_once": Case(
        lambda url: agent_step({"teleport": {"to": url}}), True, 2, correction="`teleport` is not an available action"
    ),
    "blank_cards_once": Case(
        lambda url: blank_cards(_navigate(url)), True, 2, correction="left every narrative field blank"
    ),
    "blank_cards_forever": Case(lambda _: blank_cards(done(ANSWER)), True, 3, repeat=True),
    # stay unusable: the step is abandoned and the turn ends invalid_output
    "missing_action_forever": Case(lambda url: missing_action(_navigate(url)), False, 3, repeat=True),
    "malformed_json": Case(lambda _: Fault.malformed("json"), False, 3, repeat=True),
    "malformed_envelope": Case(lambda _: Fault.malformed("envelope"), False, 3, repeat=True),
    "malformed_schema": Case(lambda _: Fault.malformed("schema"), False, 3, repeat=True),
    "truncated": Case(lambda _: Fault.truncated(), False, {"anthropic": 2, "openai": 1}, repeat=True),
}
RUNS = [(provider, name) for provider in MODELS for name in CASES]


def _persistent(entry: ReplyLike) -> ReplyLike:
    if isinstance(entry, Fault):
        return entry.forever()
    if isinstance(entry, dict):
        return structured(entry).forever()
    assert isinstance(entry, Reply), entry
    return entry.forever()


server = server_fixture(lambda fake: agent_env(fake), slots=2)


@dataclass
class Run:
    session: dict[str, Any]
    feed: list[dict[str, Any]]
    calls: list[LLMRequest]


@pytest.fixture(scope="module")
def runs(server: ServerProcess, fake: FakeProvider, site: FixtureSites) -> dict[tuple[str, str], Run]:
    """Start every case (two at a time on the server's slots) and collect sessions, feeds and requests."""
    started: dict[tuple[str, str], tuple[str, str]] = {}
    for provider, name in RUNS:
        case = CASES[name]
        marker = token(f"REPAIR-{provider}-{name}")
        first = case.first(f"{site.url}/")
        replies = [_persistent(first)] if case.repeat else [first]
        fake.script(marker, replies, then=done(ANSWER), when=lambda r: r.is_agent_step)
        session = create(server, task=f"{marker} Open {site.url}/ and report.", model=MODELS[provider])
        started[(provider, name)] = (session["id"], marker)
    results: dict[tuple[str, str], Run] = {}
    for key, (session_id, marker) in started.items():
        session = wait_until_status(server, session_id, {"error", "stopped", "idle", "timed_out"}, timeout=400)
        calls = [r for r in fake.requests_matching(marker) if r.is_agent_step]
        results[key] = Run(session, messages(server, session_id), calls)
    return results


@pytest.mark.parametrize(("provider", "name"), RUNS)
def test_fault_is_repaired_or_ends_invalid_output(runs: dict[tuple[str, str], Run], provider: str, name: str) -> None:
    case, run = CASES[name], runs[(provider, name)]
    session = run.session
    assert len(run.calls) <= MAX_CALLS_PER_STEP + 1
    assert len(run.calls) == case.expected_calls(provider), (
        session["lastStepSummary"],
        [r.reply_kind for r in run.calls],
    )
    steps = [data_of(m) | {"type": m["type"], "summary": m["summary"]} for m in run.feed if "step" in data_of(m)]
    for step in steps:
        assert len(step.get("errorFull", "")) <= 400, step
        for dump in ("validation error for", "errors.pydantic.dev", "input_value="):
            assert dump not in step.get("errorFull", "") and dump not in step["summary"], step
    if case.ok:
        assert (session["status"], session["isTaskSuccessful"], session["output"]) == ("stopped", True, ANSWER), (
            session["lastStepSummary"]
        )
        assert session["failureKind"] is None
        assert steps[-1]["action"] == "done" and steps[-1]["type"] == "result"
        assert all(step["type"] != "browser_action_error" for step in steps), steps
        if case.coerced:
            assert [step["action"] for step in steps] == ["navigate", "done"]
            assert steps[0]["type"] == "browser_action" and steps[0]["actions"] == ["navigate"]
        if case.correction is not None:
            assert case.correction in run.calls[1].text
            assert case.correction not in run.calls[0].text
    else:
        assert (session["status"], session["failureKind"], session["isTaskSuccessful"]) == (
            "error",
            "invalid_output",
            False,
        ), session["lastStepSummary"]
        assert session["browserLive"] is False
        errors = [step for step in steps if step["type"] == "browser_action_error"]
        assert len(errors) == 1 and errors[0]["step"] == 1, steps
        fatal = [m for m in run.feed if m["summary"].startswith("Fatal error:")]
        assert len(fatal) == 1
        assert len(json.loads(fatal[0]["data"])["errorFull"]) <= 400
