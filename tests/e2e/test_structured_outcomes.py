"""Outcomes across turns and reviews (spec §14, §15, §16.3): keep-alive follow-ups with a schema, a follow-up after a
salvaged turn, the judge's cost in the budget."""

from __future__ import annotations

import math
from collections.abc import Callable

import pytest

from tests.e2e.agent_support import create, data_of, messages, token, wait_until_status
from tests.e2e.structured_support import BLUE, PRODUCTS, RED, add_products, completions, events
from tests.fakes.llm_request import LLMRequest
from tests.fakes.llm_script import Fault, agent_step, done, is_review, navigate, structured, verdict
from tests.fakes.llm_server import FakeProvider
from tests.fakes.site import FixtureSites
from tests.support.server import ServerProcess

pytestmark = [pytest.mark.e2e, pytest.mark.display]

RESTING = {"idle", "stopped", "error", "timed_out"}


def turn(number: int, later: int | None = None) -> Callable[[LLMRequest], bool]:
    """Agent steps of one keep-alive turn: its follow-up's tag is in the conversation, the next one's not yet."""

    def matches(request: LLMRequest) -> bool:
        if not request.is_agent_step:
            return False
        mine = number == 1 or f"TURN{number}" in request.text
        return mine and (later is None or f"TURN{later}" not in request.text)

    return matches


async def test_keep_alive_follow_ups_with_a_schema_record_their_own_outcomes(
    agent_server: ServerProcess, fake: FakeProvider, site: FixtureSites
) -> None:
    marker = token("KEEPSCHEMA")
    fake.script(
        marker,
        [
            navigate(f"{site.url}/"),
            add_products(BLUE, RED),
            done("Two products."),  # bounced: the shop is not set
            Fault.malformed("json", times=3),  # one step whose replies stay unusable ends the turn
        ],
        when=turn(1, later=2),
    )
    fake.script(
        marker,
        [
            done("Nothing to add."),  # the gate is one-shot per turn: this turn's first done is bounced again
            agent_step({"set_field": {"key": "shop", "value": "Fixture Shop"}}, next="Record the shop."),
            done("The shop and its products."),
        ],
        when=turn(2, later=3),
    )
    fake.script(marker, [done("The shop publishes no phone number.", success=False)], when=turn(3))
    session = create(
        agent_server,
        task=f"{marker} List the products on {site.url}/",
        outputSchema=PRODUCTS,
        keepAlive=True,
        maxCostUsd=1,
    )
    sid = session["id"]

    first = wait_until_status(agent_server, sid, RESTING, timeout=240)
    assert first["status"] == "idle" and first["browserLive"] is True, first["lastStepSummary"]
    assert first["isTaskSuccessful"] is True and first["failureKind"] is None  # §13.7: salvaged, delivered
    assert first["output"] == {"products": [BLUE, RED]}
    [stored] = events(messages(agent_server, sid), "judge", "storeComplete")
    assert data_of(stored)["gatePassed"] is False

    follow_up = create(agent_server, sessionId=sid, task="TURN2 Also record the shop's name.", outputSchema=PRODUCTS)
    assert follow_up["status"] == "running"  # the same schema is no restart field change: the warm agent goes on
    spent = float(first["totalCostUsd"])
    assert float(follow_up["maxCostUsd"]) == pytest.approx(math.ceil((spent + 1) * 100) / 100)  # §16.3 top-up
    second = wait_until_status(agent_server, sid, RESTING, timeout=240)
    assert second["status"] == "idle", second["lastStepSummary"]
    assert second["isTaskSuccessful"] is True and second["failureKind"] is None
    assert second["output"] == {"shop": "Fixture Shop", "products": [BLUE, RED]}
    assert second["lastStepSummary"] == "Task completed successfully"

    create(agent_server, sessionId=sid, task="TURN3 And the shop's phone number?")
    third = wait_until_status(agent_server, sid, RESTING, timeout=240)
    assert third["status"] == "idle" and third["isTaskSuccessful"] is False
    assert third["failureKind"] == "agent_failure"
    assert third["lastStepSummary"] == "Task failed: The shop publishes no phone number."
    assert third["output"] == {"shop": "Fixture Shop", "products": [BLUE, RED]}  # what the store gathered

    feed = messages(agent_server, sid)
    gate = [(data_of(m)["passed"], data_of(m)["deficiencies"]) for m in events(feed, "schema", "completeness")]
    assert gate == [(False, ["shop (not set)"]), (False, ["shop (not set)"]), (True, [])]
    assert [data_of(m)["verdict"] for m in events(feed, "judge", "review")] == ["pass"]  # only turn 2 is reviewed
    assert [m["summary"] for m in completions(feed)] == [
        "Run ended without done; the output store was schema-valid, so it stands as the answer.",
        "Task completed successfully",
        "Task failed: The shop publishes no phone number.",
    ]


async def test_a_judge_call_that_reaches_the_cap_stops_the_review(
    agent_server: ServerProcess, fake: FakeProvider, site: FixtureSites
) -> None:
    """The judge's cost counts toward the budget; it never changes isTaskSuccessful (spec §14, §16.2)."""
    marker = token("JUDGEBUDGET")
    fake.script(
        marker,
        [
            navigate(f"{site.url}/"),
            agent_step([{"set_field": {"key": "shop", "value": "Fixture Shop"}}, {"add_item": {"item": BLUE}}]),
            done("One product."),
        ],
        when=lambda r: r.is_agent_step,
    )
    costly = (200_000, 0)  # $0.40 on gpt-5.6-terra, above the whole cap
    fake.script(marker, [structured(verdict(False, "List the red product too."), usage=costly)], when=is_review)
    session = create(
        agent_server, task=f"{marker} List the products on {site.url}/", outputSchema=PRODUCTS, maxCostUsd=0.3
    )
    finished = wait_until_status(agent_server, session["id"], RESTING, timeout=240)
    assert finished["status"] == "stopped" and finished["failureKind"] == "budget_exceeded"
    assert float(finished["llmCostUsd"]) >= 0.4  # the judge's call is in the session's cost
    assert finished["lastStepSummary"].startswith("Stopped: Cost $")
    assert finished["lastStepSummary"].endswith(
        "exceeded budget $0.3. The output store was schema-valid, so it stands as the answer."
    )
    assert finished["isTaskSuccessful"] is True
    assert finished["output"] == {"shop": "Fixture Shop", "products": [BLUE]}
    requests = fake.requests_matching(marker)
    assert len([r for r in requests if r.is_agent_step]) == 3  # no continuation round was paid for
    feed = messages(agent_server, session["id"])
    assert [data_of(m)["verdict"] for m in events(feed, "judge", "review")] == ["changes"]
    [dissent] = events(feed, "judge", "dissent")
    assert (data_of(dissent)["verdict"], data_of(dissent)["recorded"]) == ("FAIL", "success")


async def test_unusable_replies_with_an_invalid_store_fail_but_keep_what_was_gathered(
    agent_server: ServerProcess, fake: FakeProvider, site: FixtureSites
) -> None:
    marker = token("UNUSABLE")
    shop_required = {**PRODUCTS, "required": ["shop", "products"]}
    fake.script(
        marker,
        [navigate(f"{site.url}/"), add_products(BLUE), Fault.malformed("json").forever()],
        when=lambda r: r.is_agent_step,
    )
    session = create(agent_server, task=f"{marker} List the products on {site.url}/", outputSchema=shop_required)
    finished = wait_until_status(agent_server, session["id"], RESTING, timeout=240)
    assert finished["status"] == "error" and finished["failureKind"] == "invalid_output"
    assert finished["isTaskSuccessful"] is False  # §13.7 needs a schema-valid store: "shop" is missing
    assert finished["output"] == {"shop": None, "products": [BLUE]}
    feed = messages(agent_server, session["id"])
    assert not events(feed, "judge", "storeComplete") and not completions(feed)
    assert feed[-1]["type"] == "browser_action_error" and feed[-1]["summary"].startswith("Fatal error: ")


async def test_a_failing_review_round_leaves_the_done_standing(agent_server: ServerProcess, fake: FakeProvider) -> None:
    marker = token("REVIEWFAULT")
    fake.script(
        marker, [done("The answer is 41."), Fault.status(400, "bad request").forever()], when=lambda r: r.is_agent_step
    )
    fake.script(marker, [verdict(False, "The answer must be 42.")], when=is_review)
    session = create(agent_server, task=f"{marker} Say the answer.")
    finished = wait_until_status(agent_server, session["id"], RESTING, timeout=240)
    assert finished["status"] == "stopped", finished["lastStepSummary"]
    assert finished["isTaskSuccessful"] is True and finished["failureKind"] is None
    assert finished["output"] == "The answer is 41."
    feed = messages(agent_server, session["id"])
    reviews = [data_of(m) for m in events(feed, "judge", "review")]
    assert [r["verdict"] for r in reviews] == ["changes", "error"]
    assert "bad request" in reviews[1]["error"]
    [dissent] = events(feed, "judge", "dissent")
    assert (data_of(dissent)["verdict"], data_of(dissent)["recorded"]) == ("FAIL", "success")


async def test_a_cold_keep_alive_follow_up_goes_on_from_the_previous_answer(
    agent_server: ServerProcess, fake: FakeProvider, site: FixtureSites
) -> None:
    marker = token("COLDSTORE")
    fake.script(
        marker,
        [
            navigate(f"{site.url}/"),
            agent_step([{"set_field": {"key": "shop", "value": "Fixture Shop"}}, {"add_item": {"item": BLUE}}]),
            done("One product so far."),
        ],
        when=turn(1, later=2),
    )
    fake.script(marker, [add_products(RED), done("Both products.")], when=turn(2))
    session = create(
        agent_server, task=f"{marker} List the products on {site.url}/", outputSchema=PRODUCTS, keepAlive=True
    )
    first = wait_until_status(agent_server, session["id"], RESTING, timeout=240)
    assert first["status"] == "idle" and first["output"] == {"shop": "Fixture Shop", "products": [BLUE]}
    cold = create(agent_server, sessionId=session["id"], task="TURN2 Add the red one too.", model="gpt-5.6-luna")
    assert cold["status"] == "created"  # a changed model releases the browser: a fresh run replays the conversation
    second = wait_until_status(agent_server, session["id"], RESTING, timeout=240)
    assert second["isTaskSuccessful"] is True, second["lastStepSummary"]
    assert second["output"] == {"shop": "Fixture Shop", "products": [BLUE, RED]}
    [restored] = events(messages(agent_server, session["id"]), "schema", "restore")
    assert restored["summary"] == (
        "Output store restored from the previous turn — Coverage — products: 1 item(s); filled on all: name, price."
    )
    replayed = next(r for r in fake.requests_matching(marker) if r.is_agent_step and "TURN2" in r.text)
    assert "The output store already holds the answer of the previous turn" in replayed.text
