"""Sessions doing their tasks: browser-use on a real Chromium, the fake provider, local fixture sites."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from browser_use_sdk.v3 import AsyncBrowserUse

from tests.e2e.agent_support import (
    agent_steps,
    create,
    data_of,
    get,
    messages,
    stop,
    token,
    wait_until_status,
)
from tests.fakes.llm_script import Gate, agent_step, click_on, done, navigate, structured, type_into
from tests.fakes.llm_server import FakeProvider
from tests.fakes.site import FixtureSites
from tests.support.polling import wait_for_status
from tests.support.server import ServerProcess

pytestmark = [pytest.mark.e2e, pytest.mark.display]


async def test_purchase_flow_completes(
    agent_server: ServerProcess, fake: FakeProvider, site: FixtureSites, sdk: Callable[[ServerProcess], AsyncBrowserUse]
) -> None:
    marker = token("BUY")
    fake.script(
        marker,
        [
            click_on("Blue Widget"),
            click_on("Add to cart"),
            click_on("Checkout"),
            type_into("Full name", "Ada Lovelace"),
            click_on("Place order"),
            done("Order #1001 for the Blue Widget is confirmed."),
        ],
        when=agent_steps,
    )
    client = sdk(agent_server)
    created = await client.sessions.create(f"{marker} Open {site.url}/ and buy the Blue Widget as Ada Lovelace.")
    finished = await wait_for_status(client, created.id, {"stopped", "error"}, timeout=120)
    assert finished.status.value == "stopped", finished.last_step_summary
    assert finished.is_task_successful is True
    assert finished.output == "Order #1001 for the Blue Widget is confirmed."
    assert finished.step_count == 6
    assert finished.last_step_summary == "Task completed successfully"
    assert int(finished.total_input_tokens or 0) > 0 and float(finished.llm_cost_usd or 0) > 0
    assert [order["name"] for order in site.state.orders] == ["Ada Lovelace"]
    assert "Blue Widget" in site.state.orders[0]["items"]
    feed = messages(agent_server, str(created.id))
    kinds = [m["type"] for m in feed]
    assert kinds[:2] == ["user_message", "planning"]
    assert kinds[-1] == "completion" and kinds.count("browser_action") == 5 and kinds.count("result") == 1
    goal = next(m for m in feed if m["type"] == "event" and data_of(m)["category"] == "goal")
    assert goal["summary"]
    steps = [data_of(m) for m in feed if m["type"] in {"browser_action", "result"}]
    assert [s["step"] for s in steps] == [1, 2, 3, 4, 5, 6]
    assert all(s["see"] and s["plan"] and s["next"] for s in steps)
    assert steps[3]["action"] == "input" and steps[3]["category"] == "interaction"
    assert steps[-1]["action"] == "done" and steps[-1]["category"] == "done"
    requests = fake.requests_matching(marker)
    agent_calls = [r for r in requests if r.is_agent_step]
    assert all(r.api == "responses" for r in requests)
    assert "GOAL:" in agent_calls[0].text and "what_i_see" in agent_calls[0].text


async def test_form_flow_on_anthropic(
    agent_server: ServerProcess, fake: FakeProvider, site: FixtureSites, sdk: Callable[[ServerProcess], AsyncBrowserUse]
) -> None:
    marker = token("FORM")
    fake.script(
        marker,
        [
            type_into("Your name", "Grace Hopper"),
            lambda r: agent_step(
                [{"select_dropdown": {"index": r.find_index("Topic"), "text": "Billing"}}],
                next="Pick the Billing topic.",
            ),
            type_into("Message", "Please send an invoice."),
            click_on("Send message"),
            done("Message sent to billing."),
        ],
        when=agent_steps,
    )
    session = create(
        agent_server, task=f"{marker} Open {site.url}/form and send billing a message.", model="claude-sonnet-5"
    )
    finished = wait_until_status(agent_server, session["id"], {"stopped", "error"})
    assert finished["status"] == "stopped", finished["lastStepSummary"]
    assert finished["isTaskSuccessful"] is True and finished["model"] == "claude-sonnet-5"
    assert {"name": "Grace Hopper", "topic": "Billing", "message": "Please send an invoice."} in site.state.submissions
    assert {r.api for r in fake.requests_matching(marker)} == {"anthropic"}


async def test_keep_alive_takes_a_warm_and_a_cold_follow_up(
    agent_server: ServerProcess, fake: FakeProvider, site: FixtureSites
) -> None:
    marker = token("KEEP")
    fake.script(
        marker,
        [
            navigate(f"{site.url}/product/green"),
            done("The Green Gizmo costs 8.25 EUR."),
            done("It is the Green Gizmo page."),
            done("Earlier I found the Green Gizmo at 8.25 EUR."),
        ],
        when=agent_steps,
    )
    session = create(agent_server, task=f"{marker} What does the green product cost on {site.url}/ ?", keepAlive=True)
    sid = session["id"]
    parked = wait_until_status(agent_server, sid, {"idle", "error", "stopped"})
    assert parked["status"] == "idle" and parked["browserLive"] is True and parked["liveUrl"]
    assert parked["output"] == "The Green Gizmo costs 8.25 EUR."

    warm = create(agent_server, sessionId=sid, task="Which page are you on right now?")
    assert warm["status"] == "running"
    second = wait_until_status(agent_server, sid, {"idle", "error", "stopped"})
    assert second["status"] == "idle" and second["output"] == "It is the Green Gizmo page."
    warm_request = [r for r in fake.requests_matching(marker) if r.is_agent_step][-1]
    assert "/product/green" in (warm_request.browser_state or "")
    assert "Which page are you on right now?" in warm_request.text

    cold = create(agent_server, sessionId=sid, task="Remind me what you found.", model="gpt-5.6-luna")
    assert cold["status"] == "created"
    third = wait_until_status(agent_server, sid, {"idle", "error", "stopped"})
    assert third["status"] == "idle" and third["output"] == "Earlier I found the Green Gizmo at 8.25 EUR."
    feed = messages(agent_server, sid)
    notes = [m["summary"] for m in feed if m["type"] == "event" and data_of(m)["category"] == "system"]
    assert "Browser released to apply new model, reasoning effort" in notes
    assert "Conversation replayed into a fresh browser" in notes
    replayed = next(r for r in fake.requests_matching("Remind me what you found.") if r.is_agent_step)
    assert "FOLLOW-UP REQUEST: Remind me what you found." in replayed.text
    assert "The Green Gizmo costs 8.25 EUR." in replayed.text
    assert third["stepCount"] == 4
    stopped = stop(agent_server, sid)
    assert stopped["status"] == "stopped" and stopped["browserLive"] is False
    assert stopped["output"] == "Earlier I found the Green Gizmo at 8.25 EUR." and stopped["isTaskSuccessful"] is True


@pytest.mark.parametrize(("strategy", "status"), [("task", "idle"), ("session", "stopped")])
async def test_stop_mid_step_cancels_the_llm_call(
    agent_server: ServerProcess, fake: FakeProvider, site: FixtureSites, strategy: str, status: str
) -> None:
    marker = token("STOP")
    gate = Gate()
    fake.script(marker, [navigate(f"{site.url}/"), structured(done(), gate=gate)], when=agent_steps)
    session = create(agent_server, task=f"{marker} Look at {site.url}/ and wait.")
    sid = session["id"]
    assert gate.wait_entered(90), "the second LLM call never started"
    stopped = stop(agent_server, sid, strategy)
    assert stopped["status"] == status
    assert stopped["browserLive"] is False and stopped["liveUrl"] is None
    assert stopped["failureKind"] is None and stopped["isTaskSuccessful"] is False
    assert stopped["lastStepSummary"] == "Stopped by request. There was no output to keep."
    completion = messages(agent_server, sid)[-1]
    assert completion["type"] == "completion" and completion["summary"].startswith("Stopped by request.")
    gate.open()
    assert get(agent_server, sid)["status"] == status


@pytest.mark.parametrize(("keep_alive", "status"), [(False, "stopped"), (True, "idle")])
async def test_budget_stop(
    agent_server: ServerProcess, fake: FakeProvider, site: FixtureSites, keep_alive: bool, status: str
) -> None:
    marker = token("BUDGET")
    expensive = (200_000, 1_000, 0, 0)  # gpt-5.6-terra: 0.4 + 0.012 USD per call
    fake.script(
        marker,
        [
            structured(navigate(f"{site.url}/"), usage=expensive),
            structured(navigate(f"{site.url}/form"), usage=expensive),
        ],
        then=structured(done("never reached"), usage=expensive),
        when=agent_steps,
    )
    session = create(agent_server, task=f"{marker} Browse {site.url}/ a lot.", maxCostUsd=0.5, keepAlive=keep_alive)
    finished = wait_until_status(agent_server, session["id"], {"stopped", "idle", "error"})
    assert finished["status"] == status
    assert finished["failureKind"] == "budget_exceeded"
    assert finished["isTaskSuccessful"] is False
    assert finished["browserLive"] is False
    assert finished["lastStepSummary"].startswith("Stopped: Cost $")
    assert "exceeded budget $0.5" in finished["lastStepSummary"]
    assert float(finished["totalCostUsd"]) >= 0.4
    assert finished["stepCount"] <= 2
