"""``solve_captcha`` through real runs: a fake CapSolver on loopback, a page with a reCAPTCHA-v2-like widget."""

from __future__ import annotations

import json
from collections.abc import Iterator
from decimal import Decimal

import pytest

from openbrowse.agent.prompts import NO_SOLVER
from tests.conftest import StartServer
from tests.e2e.agent_support import agent_steps, create, data_of, messages, step_requests, token, wait_until_status
from tests.fakes.capsolver import API_KEY, SITE_KEY, CaptchaPage, FakeCapSolver, Outcome
from tests.fakes.llm_request import LLMRequest
from tests.fakes.llm_script import agent_step, click_on, done, navigate
from tests.fakes.llm_server import FakeProvider
from tests.support.server import ServerProcess

pytestmark = [pytest.mark.e2e, pytest.mark.display, pytest.mark.timeout(300)]


@pytest.fixture(scope="module")
def capsolver() -> Iterator[FakeCapSolver]:
    with FakeCapSolver() as solver:
        yield solver


@pytest.fixture(scope="module")
def captcha_page() -> Iterator[CaptchaPage]:
    with CaptchaPage() as page:
        yield page


def offers_solve_captcha(request: LLMRequest) -> bool:
    """Whether the action definitions the request carries (schema or schema-in-prompt) have ``solve_captcha``."""
    return "hint_site_key" in json.dumps(request.body)


def captcha_events(server: ServerProcess, session_id: str) -> list[dict[str, object]]:
    return [
        {"summary": m["summary"], **data_of(m)}
        for m in messages(server, session_id)
        if m["type"] == "event" and data_of(m).get("category") == "captcha"
    ]


def test_solved_token_lands_in_the_page_and_its_cost_is_billed(
    start_server: StartServer, fake: FakeProvider, capsolver: FakeCapSolver, captcha_page: CaptchaPage
) -> None:
    server = start_server(**fake.env(), **capsolver.env())
    before = len(capsolver.created)
    marker = token("CAPTCHA")
    guarded = f"{captcha_page.url}/guarded"
    capsolver.script(Outcome(token=captcha_page.state.expected_token, cost="0.0012", processing_polls=1))
    fake.script(
        marker,
        [
            navigate(guarded),
            agent_step([{"solve_captcha": {}}]),
            click_on("Check and continue"),
            done("verified"),
        ],
        when=agent_steps,
    )
    session = create(server, task=f"{marker} Read the guarded price list.")
    sid = session["id"]
    finished = wait_until_status(server, sid, {"stopped", "error"})
    assert finished["status"] == "stopped" and finished["isTaskSuccessful"] is True

    created = capsolver.created[before:]
    assert created == [{"type": "ReCaptchaV2TaskProxyLess", "websiteURL": guarded, "websiteKey": SITE_KEY}]
    assert capsolver.state.client_keys[-1] == API_KEY
    assert captcha_page.state.submissions[-1] == captcha_page.state.expected_token

    requests = step_requests(fake, marker)
    assert offers_solve_captcha(requests[0])
    assert "Solved the reCAPTCHA v2" in requests[2].text
    assert "passed to onCaptchaSolved" in requests[2].text
    assert "verified" in (requests[3].browser_state or "")

    assert finished["captchaCostUsd"] == "0.0012"
    assert Decimal(finished["totalCostUsd"]) == Decimal(finished["llmCostUsd"]) + Decimal("0.0012")
    events = captcha_events(server, sid)
    assert [e["outcome"] for e in events] == ["started", "solved"]
    assert events[1]["action"] == "solve" and events[1]["costUsd"] == "0.0012"
    assert events[1]["siteKey"] == SITE_KEY


def test_without_a_key_the_action_is_not_offered_and_the_prompt_says_so(
    agent_server: ServerProcess, fake: FakeProvider
) -> None:
    marker = token("NOCAPTCHA")
    fake.script(marker, [done("A CAPTCHA blocks the page.", success=False)], when=agent_steps)
    session = create(agent_server, task=f"{marker} Read the guarded price list.")
    wait_until_status(agent_server, session["id"], {"stopped", "error"})
    request = step_requests(fake, marker)[0]
    assert "visible_only" in json.dumps(request.body)  # the other actions' definitions are there
    assert "solve_captcha" not in json.dumps(request.body) and not offers_solve_captcha(request)
    assert NO_SOLVER in request.text


def test_missing_site_key_and_spent_allowance_are_refused_before_any_spend(
    start_server: StartServer, fake: FakeProvider, capsolver: FakeCapSolver, captcha_page: CaptchaPage
) -> None:
    """The per-run ceiling binds within a turn; a keep-alive follow-up starts a fresh allowance (spec §8.1)."""
    server = start_server(**fake.env(), **capsolver.env(), CAPTCHA_MAX_COST_USD="0.001")
    before = len(capsolver.created)
    marker = token("CAPREFUSE")
    capsolver.script(Outcome(token="over-the-cap", cost="0.0012"), Outcome(token="next-turn", cost="0.0012"))
    fake.script(
        marker,
        [
            navigate(f"{captcha_page.url}/keyless"),
            agent_step([{"solve_captcha": {}}]),
            navigate(f"{captcha_page.url}/guarded"),
            agent_step([{"solve_captcha": {}}]),
            agent_step([{"solve_captcha": {}}]),
            done("blocked by a CAPTCHA", success=False),
            agent_step([{"solve_captcha": {}}]),
            done("solved in the follow-up"),
        ],
        when=agent_steps,
    )
    session = create(server, task=f"{marker} Read the guarded price list.", keepAlive=True)
    sid = session["id"]
    parked = wait_until_status(server, sid, {"idle", "stopped", "error"})
    assert parked["status"] == "idle"

    requests = step_requests(fake, marker)
    assert "reCAPTCHA v2 detected but the site key (pass hint_site_key) was not found" in requests[2].text
    assert "Solved the reCAPTCHA v2" in requests[4].text
    assert "reached the $0.001 ceiling (CAPTCHA_MAX_COST_USD)" in requests[5].text
    guarded = f"{captcha_page.url}/guarded"
    assert [task["websiteURL"] for task in capsolver.created[before:]] == [guarded]
    assert parked["captchaCostUsd"] == "0.0012"
    outcomes = [e["outcome"] for e in captcha_events(server, sid)]
    assert outcomes == ["refused", "started", "solved", "refused"]

    create(server, sessionId=sid, task="Try the CAPTCHA once more.")
    second = wait_until_status(server, sid, {"idle", "stopped", "error"})
    assert second["status"] == "idle" and second["output"] == "solved in the follow-up"
    assert [task["websiteURL"] for task in capsolver.created[before:]] == [guarded, guarded]
    assert second["captchaCostUsd"] == "0.0024"
    assert Decimal(second["totalCostUsd"]) == Decimal(second["llmCostUsd"]) + Decimal("0.0024")
