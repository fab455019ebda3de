"""The v3 sessions surface through the official SDK and plain HTTP, against a real server process.

These sessions never reach a browser: the server has no provider key, so every dispatched task takes the
never-started path (spec §6), which is itself part of the contract.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from browser_use_sdk import BrowserUseError
from browser_use_sdk.v3 import AsyncBrowserUse

from tests.e2e.servers import server_fixture
from tests.support.polling import wait_for_status
from tests.support.server import ServerProcess

pytestmark = pytest.mark.e2e

SESSION_FIELDS = {
    "id", "status", "model", "title", "output", "outputSchema", "stepCount", "lastStepSummary",
    "isTaskSuccessful", "liveUrl", "recordingUrls", "profileId", "workspaceId", "proxyCountryCode",
    "maxCostUsd", "totalInputTokens", "totalOutputTokens", "llmCostUsd", "proxyCostUsd", "browserCostUsd",
    "proxyUsedMb", "totalCostUsd", "screenshotUrl", "reasoningEffort", "failureKind", "failureStatusCode",
    "agentmailEmail", "integrationsUsed", "keepAlive", "captchaCostUsd", "browserLive", "createdAt", "updatedAt",
}  # fmt: skip
MESSAGE_FIELDS = {"id", "sessionId", "role", "type", "summary", "data", "screenshotUrl", "hidden", "createdAt"}


server = server_fixture({"CLOUD_MAX_COST_FACTOR": "0.5"}, both_stores=True)  # on SQLite and on PostgreSQL


@pytest.fixture
def client(server: ServerProcess, sdk: Callable[[ServerProcess], AsyncBrowserUse]) -> AsyncBrowserUse:
    return sdk(server)


def create(http: httpx.Client, **body: Any) -> dict[str, Any]:
    response = http.post("/v3/sessions", json=body)
    assert response.status_code == 200, response.text
    data: dict[str, Any] = response.json()
    return data


def detail(response: httpx.Response) -> Any:
    return response.json()["detail"]


# -- create, get, list ----------------------------------------------------------------------------------------
async def test_sdk_creates_a_shell_and_reads_it_back(client: AsyncBrowserUse, http: httpx.Client) -> None:
    created = await client.sessions.create()
    assert created.status.value == "created"
    assert created.live_url is None and created.title is None and created.output is None
    fetched = await client.sessions.get(created.id)
    assert fetched.id == created.id
    listed = await client.sessions.list(page_size=100)
    assert created.id in {s.id for s in listed.sessions}
    raw = http.get(f"/v3/sessions/{created.id}").json()
    assert set(raw) >= SESSION_FIELDS
    assert raw["recordingUrls"] == [] and raw["integrationsUsed"] == []
    assert raw["llmCostUsd"] == "0" and raw["totalCostUsd"] == "0" and raw["proxyUsedMb"] == "0"
    assert raw["createdAt"].endswith("+00:00")


async def test_task_without_provider_key_fails_before_any_step(client: AsyncBrowserUse, http: httpx.Client) -> None:
    created = await client.sessions.create("Open https://example.com and read the title.", model="gpt-5.6-terra")
    assert created.status.value == "created"
    await wait_for_status(client, created.id, {"error"})
    raw = http.get(f"/v3/sessions/{created.id}").json()
    assert raw["failureKind"] == "agent_failure"
    assert raw["failureStatusCode"] is None
    assert raw["stepCount"] == 0
    assert raw["isTaskSuccessful"] is False
    assert "OPENAI_API_KEY" in raw["lastStepSummary"]
    page = await client.sessions.messages(created.id)
    kinds = [m.type for m in page.messages]
    assert kinds == ["user_message", "browser_action_error"]
    assert page.messages[0].role == "user" and page.messages[0].data == ""
    assert "Model 'gpt-5.6-terra' needs OPENAI_API_KEY, which is not configured" in (page.messages[1].summary or "")
    assert json.loads(page.messages[1].data)["errorFull"]
    raw_messages = http.get(f"/v3/sessions/{created.id}/messages").json()["messages"]
    assert all(set(m) == MESSAGE_FIELDS for m in raw_messages)


async def test_list_is_newest_first_and_paged(client: AsyncBrowserUse) -> None:
    ids = [(await client.sessions.create()).id for _ in range(3)]
    first = await client.sessions.list(page=1, page_size=2)
    second = await client.sessions.list(page=2, page_size=2)
    assert [s.id for s in first.sessions] == [ids[2], ids[1]]
    assert second.sessions[0].id == ids[0]
    assert first.total == second.total >= 3
    assert first.page_size == 2 and second.page == 2
    far = await client.sessions.list(page=10_000, page_size=100)
    assert far.sessions == []


# -- models and efforts -----------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("sent", "echoed", "effort"),
    [
        ("claude-opus-4-8", "claude-opus-4.8", "none"),
        ("claude-opus-4.8[1m]", "claude-opus-4.8[1m]", "none"),
        ("claude-sonnet-4.6", "claude-sonnet-4.6", "none"),
        ("claude-fable-5", "claude-fable-5", "high"),
        ("gpt-5.6-luna", "gpt-5.6-luna", "max"),
        ("bu-max", "bu-max", "none"),
        ("openai/llama-3.3-70b", "openai/llama-3.3-70b", "default"),
    ],
)
def test_model_names_resolve_and_echo(http: httpx.Client, sent: str, echoed: str, effort: str) -> None:
    session = create(http, model=sent)
    assert session["model"] == echoed
    assert session["reasoningEffort"] == effort


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"model": "gpt-4o"}, "'gpt-4o' is not a valid model."),
        ({"model": "claude-fable-5", "reasoningEffort": "none"}, "reasoning cannot be disabled on claude-fable-5."),
        ({"model": "claude-opus-4-6", "reasoningEffort": "xhigh"}, "Valid values: default, none, low, medium, high."),
        ({"reasoningEffort": "extreme"}, "'extreme' is not a valid reasoningEffort."),
        ({"thinkingLevel": "low", "reasoningEffort": "low"}, "not both"),
        ({"thinkingLevel": None}, "is not a valid thinkingLevel"),
        ({"thinkingLevel": "huge"}, "is not a valid thinkingLevel"),
        ({"thinkingEffort": "low"}, "use 'reasoningEffort'"),
        ({"modelThinkingEffort": 3}, "use 'reasoningEffort'"),
    ],
)
def test_bad_model_or_effort_is_a_422_sentence(http: httpx.Client, body: dict[str, Any], message: str) -> None:
    response = http.post("/v3/sessions", json=body)
    assert response.status_code == 422
    assert isinstance(detail(response), str) and message in detail(response)


def test_thinking_level_maps_to_reasoning_effort(http: httpx.Client) -> None:
    assert create(http, model="claude-sonnet-5", thinkingLevel="disabled")["reasoningEffort"] == "none"
    assert create(http, model="claude-sonnet-5", thinkingLevel="medium")["reasoningEffort"] == "medium"


async def test_sdk_accepts_the_sessions_it_creates_for_each_bu_model(client: AsyncBrowserUse) -> None:
    for model in ("claude-opus-4.8", "claude-sonnet-5", "gpt-5.6-terra", "bu-mini", "bu-ultra"):
        session = await client.sessions.create(model=model)
        assert session.model.value == model


# -- budgets ------------------------------------------------------------------------------------------------------
def test_budget_is_scaled_and_rounded_up(http: httpx.Client) -> None:
    assert create(http, maxCostUsd=3)["maxCostUsd"] == "1.5"  # CLOUD_MAX_COST_FACTOR=0.5
    assert create(http, maxCostUsd=0.011)["maxCostUsd"] == "0.01"
    assert create(http, maxCostUsd="2.5")["maxCostUsd"] == "1.25"
    assert create(http)["maxCostUsd"] is None


@pytest.mark.parametrize(
    "raw",
    [
        '{"maxCostUsd": 0}',
        '{"maxCostUsd": -1}',
        '{"maxCostUsd": 3.8e291}',  # found by schemathesis: the cent rounding overflowed Decimal
    ],
)
def test_bad_budget_is_a_422_never_a_500(http: httpx.Client, raw: str) -> None:
    response = http.post("/v3/sessions", content=raw, headers={"content-type": "application/json"})
    assert response.status_code == 422
    assert response.json()["detail"][0]["loc"] == ["body", "maxCostUsd"]


@pytest.mark.parametrize("raw", ['{"maxCostUsd": NaN}', '{"maxCostUsd": Infinity}'])
def test_a_number_json_cannot_hold_is_a_400(http: httpx.Client, raw: str) -> None:
    """NaN and Infinity are not JSON (spec §25.1): the body is refused before any field is looked at."""
    response = http.post("/v3/sessions", content=raw, headers={"content-type": "application/json"})
    assert response.status_code == 400
    assert detail(response).endswith(".")


# -- bad input ----------------------------------------------------------------------------------------------------
def test_malformed_and_mistyped_bodies(http: httpx.Client) -> None:
    response = http.post("/v3/sessions", content=b"{bad", headers={"content-type": "application/json"})
    assert response.status_code == 400 and detail(response).startswith("The request body is not valid JSON")
    response = http.post("/v3/sessions", json=[1, 2])
    assert response.status_code == 422
    response = http.post("/v3/sessions", json={"task": 123})
    assert response.status_code == 422 and response.json()["detail"][0]["loc"] == ["body", "task"]
    response = http.post("/v3/sessions", json={"keepAlive": {"x": 1}})
    assert response.status_code == 422
    assert create(http, unknownField=1, agentmail=True)["status"] == "created"
    assert http.post("/v3/sessions", json={"workspaceId": "w"}).status_code == 404  # implemented, never ignored
    null_body = http.post("/v3/sessions", content=b"null", headers={"content-type": "application/json"})
    assert null_body.status_code == 200
    assert http.post("/v3/sessions").status_code == 200


def test_unknown_ids_and_bad_queries(http: httpx.Client) -> None:
    assert http.get("/v3/sessions/nope").status_code == 404
    assert detail(http.get("/v3/sessions/nope")) == "Session not found"
    assert http.post("/v3/sessions/nope/stop").status_code == 404
    assert http.delete("/v3/sessions/nope").status_code == 404
    assert http.get("/v3/sessions/nope/messages").status_code == 404
    follow_up = http.post("/v3/sessions", json={"sessionId": "nope", "task": "x"})
    assert follow_up.status_code == 404 and detail(follow_up) == "Session not found"
    for query in ("page=0", "page_size=0", "page_size=101", "page=abc"):
        assert http.get(f"/v3/sessions?{query}").status_code == 422
    shell = create(http)
    for query in ("limit=0", "limit=1001"):
        assert http.get(f"/v3/sessions/{shell['id']}/messages?{query}").status_code == 422
    assert http.post(f"/v3/sessions/{shell['id']}/stop", json={"strategy": "bogus"}).status_code == 422


async def test_message_cursors(client: AsyncBrowserUse, http: httpx.Client) -> None:
    session = create(http, task="first", keepAlive=True)
    await wait_for_status(client, session["id"], {"error"})
    for n in range(3):
        create(http, sessionId=session["id"], task=f"follow-up {n}")
        await wait_for_status(client, session["id"], {"error"})
    everything = (await client.sessions.messages(session["id"], limit=1000)).messages
    assert len(everything) == 8
    ids = [m.id for m in everything]
    head = await client.sessions.messages(session["id"], limit=3)
    assert [m.id for m in head.messages] == ids[:3] and head.has_more
    after = await client.sessions.messages(session["id"], after=str(ids[2]), limit=3)
    assert [m.id for m in after.messages] == ids[3:6] and after.has_more
    tail = await client.sessions.messages(session["id"], after=str(ids[5]), limit=3)
    assert [m.id for m in tail.messages] == ids[6:] and not tail.has_more
    before = await client.sessions.messages(session["id"], before=str(ids[5]), limit=2)
    assert [m.id for m in before.messages] == ids[3:5] and before.has_more
    start = await client.sessions.messages(session["id"], before=str(ids[2]), limit=5)
    assert [m.id for m in start.messages] == ids[:2] and not start.has_more
    other = create(http, task="other")
    await wait_for_status(client, other["id"], {"error"})
    unknown = http.get(f"/v3/sessions/{session['id']}/messages", params={"after": other["id"]})
    assert unknown.status_code == 422 and detail(unknown) == "Unknown message cursor"
    other_message = http.get(f"/v3/sessions/{other['id']}/messages").json()["messages"][0]["id"]
    crossed = http.get(f"/v3/sessions/{session['id']}/messages", params={"before": other_message})
    assert crossed.status_code == 422 and detail(crossed) == "Unknown message cursor"


# -- follow-ups -------------------------------------------------------------------------------------------------
async def test_follow_up_rules(client: AsyncBrowserUse, http: httpx.Client) -> None:
    plain = create(http, task="plain task")
    await wait_for_status(client, plain["id"], {"error"})
    refused = http.post("/v3/sessions", json={"sessionId": plain["id"], "task": "again"})
    assert refused.status_code == 422 and detail(refused) == "Session is error, not idle"
    shell = create(http, model="claude-sonnet-5", maxCostUsd=4)
    missing = http.post("/v3/sessions", json={"sessionId": shell["id"]})
    assert missing.status_code == 422 and detail(missing) == "Task is required when targeting an existing session"
    empty = http.post("/v3/sessions", json={"sessionId": shell["id"], "task": ""})
    assert empty.status_code == 422
    queued = create(http, sessionId=shell["id"], task="now do it", keepAlive=True)
    assert queued["status"] in {"created", "error"}
    assert queued["model"] == "claude-sonnet-5" and queued["maxCostUsd"] == "2" and queued["keepAlive"] is True
    assert queued["title"] == "now do it"
    done = await wait_for_status(client, shell["id"], {"error"})
    assert "ANTHROPIC_API_KEY" in (done.last_step_summary or "")
    again = create(http, sessionId=shell["id"], task="second", model="gpt-5.6-luna", maxCostUsd=10)
    assert again["model"] == "gpt-5.6-luna" and again["reasoningEffort"] == "max" and again["maxCostUsd"] == "5"
    assert again["title"] == "now do it"
    await wait_for_status(client, shell["id"], {"error"})


async def test_keep_alive_top_up_and_expired_refusal(client: AsyncBrowserUse, http: httpx.Client) -> None:
    session = create(http, task="t", keepAlive=True, maxCostUsd=2)
    assert session["maxCostUsd"] == "1"
    await wait_for_status(client, session["id"], {"error"})
    follow = create(http, sessionId=session["id"], task="t2")
    assert follow["maxCostUsd"] == "1"  # spent 0 + allowance 1
    await wait_for_status(client, session["id"], {"error"})
    own = create(http, sessionId=session["id"], task="t3", maxCostUsd=3)
    assert own["maxCostUsd"] == "1.5"  # an absolute ceiling (scaled like at creation), for this dispatch only
    await wait_for_status(client, session["id"], {"error"})
    assert create(http, sessionId=session["id"], task="t4")["maxCostUsd"] == "1"
    unlimited = create(http, task="u", keepAlive=True)
    await wait_for_status(client, unlimited["id"], {"error"})
    assert create(http, sessionId=unlimited["id"], task="u2", maxCostUsd=3)["maxCostUsd"] == "1.5"
    await wait_for_status(client, unlimited["id"], {"error"})
    assert create(http, sessionId=unlimited["id"], task="u3")["maxCostUsd"] is None


# -- stop and delete ----------------------------------------------------------------------------------------------
async def test_stop_strategies_on_resting_sessions(client: AsyncBrowserUse, http: httpx.Client) -> None:
    shell = await client.sessions.create()
    stopped = await client.sessions.stop(shell.id)
    assert stopped.status.value == "stopped"
    again = await client.sessions.stop(shell.id, strategy="session")
    assert again.status.value == "stopped"
    idle = await client.sessions.stop(shell.id, strategy="task")
    assert idle.status.value == "idle"
    accepted = create(http, sessionId=str(shell.id), task="works again")
    assert accepted["status"] in {"created", "error"}
    await wait_for_status(client, shell.id, {"error"})
    errored = http.post(f"/v3/sessions/{shell.id}/stop", json={"strategy": "session"}).json()
    assert errored["status"] == "error"


async def test_delete_removes_row_feed_and_files(client: AsyncBrowserUse, server: ServerProcess) -> None:
    session = await client.sessions.create("delete me")
    await wait_for_status(client, session.id, {"error"})
    folder = Path(server.home) / "data" / "sessions" / str(session.id)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "output.json").write_text("{}")
    await client.sessions.delete(session.id)
    with pytest.raises(BrowserUseError) as lost:
        await client.sessions.get(session.id)
    assert lost.value.status_code == 404
    assert not folder.exists()


def test_health(http: httpx.Client) -> None:
    assert http.get("/health").json() == {"status": "ok", "database": "ok"}
    details = http.get("/health/details").json()
    assert details["status"] == "ok" and details["maxConcurrentSessions"] == 1
    assert {"activeSessions", "queuedSessions", "parkedSessions", "cpu", "memory", "isAvailable"} <= set(details)


async def test_the_title_comes_from_the_first_task_and_patch_changes_it(
    client: AsyncBrowserUse, http: httpx.Client
) -> None:
    task = "\n  Find the   cheapest flight to Lisbon next Friday " + "and compare airlines " * 6 + "\nThen book it."
    created = http.post("/v3/sessions", json={"task": task}).json()
    assert created["title"].startswith("Find the cheapest flight to Lisbon next Friday and compare")
    assert len(created["title"]) == 80 and created["title"].endswith("…") and "book" not in created["title"]

    renamed = http.patch(f"/v3/sessions/{created['id']}", json={"title": "  Lisbon   trip "})
    assert renamed.status_code == 200 and renamed.json()["title"] == "Lisbon trip"
    assert (await client.sessions.get(created["id"])).title == "Lisbon trip"
    assert http.patch(f"/v3/sessions/{created['id']}", json={"title": None}).json()["title"] is None
    assert http.patch(f"/v3/sessions/{created['id']}", json={"title": "x" * 201}).status_code == 422
    missing = http.patch("/v3/sessions/00000000-0000-4000-8000-000000000000", json={"title": "nope"})
    assert missing.status_code == 404 and missing.json() == {"detail": "Session not found"}
