"""The parts of a run around the steps: goal pre-flight and reminders, clipboard, costs, reasoning, time limit."""

from __future__ import annotations

from typing import Any

import pytest

from tests.conftest import StartServer
from tests.e2e.agent_support import agent_steps, create, data_of, get, messages, token, wait_until_status
from tests.fakes.llm_request import LLMRequest
from tests.fakes.llm_script import Fault, Gate, agent_step, done, navigate, structured, text
from tests.fakes.llm_server import FakeProvider
from tests.fakes.site import FixtureSites
from tests.support.server import ServerProcess

pytestmark = [pytest.mark.e2e, pytest.mark.display]


def text_calls(request: LLMRequest) -> bool:
    return not request.is_agent_step


def events(server: ServerProcess, session_id: str, category: str) -> list[dict[str, Any]]:
    return [m for m in messages(server, session_id) if m["type"] == "event" and data_of(m)["category"] == category]


def test_goal_pre_flight_reminders_clipboard_and_live_costs(
    agent_server: ServerProcess, fake: FakeProvider, site: FixtureSites
) -> None:
    marker = token("GOAL")
    fake.script(marker, [text("Find the cheapest product and report its price.")], when=text_calls)
    gate = Gate()
    steps = [navigate(f"{site.url}/product/{key}") for key in ("blue", "red", "green", "blue", "red")] * 2
    fake.script(
        marker,
        [
            agent_step([{"recall": {"key": "goal"}}], next="Recall the goal."),
            *steps[:9],
            structured(agent_step([{"remember": {"key": "cheapest", "value": "Green Gizmo"}}]), gate=gate),
            done("The Green Gizmo at 8.25 EUR is the cheapest."),
        ],
        when=agent_steps,
    )
    task = f"{marker} Visit {site.url}/ and find the cheapest product. Report its name and price."
    session = create(agent_server, task=task)
    sid = session["id"]
    assert gate.wait_entered(120)
    running = get(agent_server, sid)
    assert running["status"] == "running" and running["stepCount"] == 10
    assert running["totalInputTokens"] > 0 and float(running["llmCostUsd"]) > 0
    assert running["liveUrl"] == f"/vnc/{sid}/view?path=vnc/{sid}/websockify"
    gate.open()
    finished = wait_until_status(agent_server, sid, {"stopped", "error"})
    assert finished["isTaskSuccessful"] is True and finished["stepCount"] == 12
    assert float(finished["llmCostUsd"]) > float(running["llmCostUsd"])

    goal_events = events(agent_server, sid, "goal")
    assert goal_events[0]["summary"] == "Find the cheapest product and report its price."
    assert [e["summary"] for e in goal_events[1:]] == ["Goal reminder (step 10)"]
    start_url = events(agent_server, sid, "memory")[0]
    assert start_url["summary"] == f"startUrl: {site.url}/"
    remembered = [e["summary"] for e in events(agent_server, sid, "memory")]
    assert "cheapest = Green Gizmo" in remembered
    recall_row = next(m for m in messages(agent_server, sid) if data_of(m).get("action") == "recall")
    assert "Find the cheapest product" in data_of(recall_row)["resultSnippet"]

    agent_calls = [r for r in fake.requests_matching(marker) if r.is_agent_step]
    assert "GOAL: Find the cheapest product and report its price." in agent_calls[0].text
    reminder = "GOAL: Find the cheapest product and report its price. Not done until this is met."
    assert [reminder in r.text for r in agent_calls] == [False] * 10 + [True, False]


def test_a_failed_pre_flight_falls_back_to_the_first_sentence(
    agent_server: ServerProcess, fake: FakeProvider, site: FixtureSites
) -> None:
    marker = token("FALLBACK")
    fake.script(marker, [Fault.status(400, "no").forever()], when=text_calls)
    fake.script(marker, [done("ok")], when=agent_steps)
    session = create(agent_server, task=f"{marker} Check the shop at {site.url}/ today! Then say hi.")
    finished = wait_until_status(agent_server, session["id"], {"stopped", "error"})
    assert finished["status"] == "stopped" and finished["isTaskSuccessful"] is True
    assert events(agent_server, session["id"], "goal")[0]["summary"] == f"{marker} Check the shop at {site.url}/ today!"


def test_reasoning_summaries_reach_the_feed(agent_server: ServerProcess, fake: FakeProvider) -> None:
    marker = token("THINK")
    fake.script(
        marker, [structured(done("thought it through"), thinking="First I compare the prices.")], when=agent_steps
    )
    session = create(agent_server, task=f"{marker} think first", model="gpt-5.6-terra", reasoningEffort="low")
    wait_until_status(agent_server, session["id"], {"stopped"})
    reasoning = events(agent_server, session["id"], "reasoning")
    assert reasoning and reasoning[0]["summary"].startswith("Reasoned for ")
    assert data_of(reasoning[0])["reasoning"] == "First I compare the prices."
    request = next(r for r in fake.requests_matching(marker) if r.is_agent_step)
    assert request.reasoning == {"effort": "low", "summary": "auto"}


def test_a_run_over_its_time_limit_times_out(start_server: StartServer, fake: FakeProvider) -> None:
    server = start_server(**fake.env(), TASK_TIMEOUT=4)
    marker = token("SLOW")
    fake.script(marker, [structured(done("too late"), delay=30)], when=agent_steps)
    session = create(server, task=f"{marker} take forever")
    ended = wait_until_status(server, session["id"], {"timed_out", "stopped", "error"}, timeout=60)
    assert ended["status"] == "timed_out" and ended["endReason"] == "max_duration"
    assert ended["failureKind"] == "session_timeout" and ended["failureStatusCode"] is None
    assert ended["isTaskSuccessful"] is False and ended["browserLive"] is False
    assert ended["lastStepSummary"] == "Timed out after 4 s. There was no output to keep."
    assert messages(server, session["id"])[-1]["type"] == "completion"


def test_a_chain_of_actions_stops_at_the_first_page_change(
    agent_server: ServerProcess, fake: FakeProvider, site: FixtureSites
) -> None:
    marker = token("CHAIN")
    chain = agent_step(
        [
            {"remember": {"key": "a", "value": "1"}},
            {"navigate": {"url": f"{site.url}/product/red"}},
            {"remember": {"key": "b", "value": "2"}},
        ]
    )
    fake.script(marker, [chain, done("ok")], when=agent_steps)
    session = create(agent_server, task=f"{marker} chain some actions")
    wait_until_status(agent_server, session["id"], {"stopped"})
    first = next(m for m in messages(agent_server, session["id"]) if m["type"] in {"browser_action", "result"})
    assert data_of(first)["actions"] == ["remember", "navigate"]
    memory = [e["summary"] for e in events(agent_server, session["id"], "memory")]
    assert memory == ["a = 1", f"startUrl: {site.url}/product/red"]  # the task named no URL: captured after step 1


def test_an_openai_compatible_server_needs_no_key(start_server: StartServer, fake: FakeProvider) -> None:
    server = start_server(OPENAI_BASE_URL=fake.openai_base_url)
    marker = token("LOCAL")
    fake.script(marker, [done("answered by a local model")], when=agent_steps)
    session = create(server, task=f"{marker} use the local model", model="openai/llama-3.3-70b")
    finished = wait_until_status(server, session["id"], {"stopped", "error"})
    assert finished["status"] == "stopped" and finished["output"] == "answered by a local model"
    assert finished["model"] == "openai/llama-3.3-70b" and finished["llmCostUsd"] == "0"
    requests = fake.requests_matching(marker)
    assert {r.api for r in requests} == {"chat"} and {r.model for r in requests} == {"llama-3.3-70b"}
    assert requests[0].headers["authorization"] == "Bearer openbrowse-no-key"
    refused = create(server, task="a gpt model still needs the key", model="gpt-5.6-terra")
    failed = wait_until_status(server, refused["id"], {"error"})
    assert "OPENAI_API_KEY" in failed["lastStepSummary"]
