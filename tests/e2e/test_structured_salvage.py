"""What a run keeps when it ends before (or without) a finished ``done``: spec §13.6 and §13.8.

A time-out and a user stop keep the answer store when it is non-empty, else the ``result.json`` the agent
wrote, and the completion row says what was kept. Without a store, a finished ``done`` whose text holds no
valid answer takes the agent's ``result.json``.
"""

from __future__ import annotations

import json

import pytest

from tests.conftest import StartServer
from tests.e2e.agent_support import (
    agent_steps,
    create,
    data_of,
    messages,
    session_files,
    stop,
    token,
    wait_until_status,
)
from tests.e2e.structured_support import (
    BLUE,
    PRODUCTS,
    PROSE_SCHEMA,
    RED,
    add_products,
    completions,
    events,
    write_result_file,
)
from tests.fakes.llm_script import Gate, done, navigate, structured
from tests.fakes.llm_server import FakeProvider
from tests.fakes.site import FixtureSites
from tests.support.server import ServerProcess

pytestmark = [pytest.mark.e2e, pytest.mark.display]

TIME_LIMIT = 30
KEPT_VALID = "The output store was schema-valid, so it stands as the answer."


def test_a_time_out_keeps_the_store_or_the_result_file(
    start_server: StartServer, fake: FakeProvider, site: FixtureSites
) -> None:
    server = start_server(
        **fake.env(), OPENAI_API_STYLE="responses", TASK_TIMEOUT=TIME_LIMIT, MAX_CONCURRENT_SESSIONS=2
    )
    hang = Gate()  # the step after the writes never gets its reply: the run's time limit ends it
    store_marker, file_marker = token("TIMEOUTSTORE"), token("TIMEOUTFILE")
    fake.script(
        store_marker,
        [navigate(f"{site.url}/"), add_products(BLUE, RED), structured(done("late"), gate=hang)],
        when=agent_steps,
    )
    fake.script(
        file_marker,
        [write_result_file({"answer": 42}), structured(done("late"), gate=hang)],
        when=agent_steps,
    )
    try:
        with_store = create(server, task=f"{store_marker} List the products on {site.url}/", outputSchema=PRODUCTS)
        with_file = create(server, task=f"{file_marker} Say the answer.", outputSchema=PROSE_SCHEMA)
        ended = {
            name: wait_until_status(server, session["id"], {"timed_out", "stopped", "error"}, timeout=180)
            for name, session in (("store", with_store), ("file", with_file))
        }
    finally:
        hang.open()
    summary = f"Timed out after {TIME_LIMIT} s. {KEPT_VALID}"
    for name, expected in (("store", {"products": [BLUE, RED]}), ("file", {"answer": 42})):
        session = ended[name]
        assert session["status"] == "timed_out", (name, session["lastStepSummary"])
        assert session["failureKind"] == "session_timeout" and session["failureStatusCode"] is None
        assert session["isTaskSuccessful"] is True and session["output"] == expected
        assert session["lastStepSummary"] == summary
        [completion] = completions(messages(server, session["id"]))
        assert completion["summary"] == summary and json.loads(data_of(completion)["output"]) == expected
    assert not (session_files(server, with_file["id"]) / "output.json").exists()  # prose mode has no store


async def test_a_user_stop_keeps_a_partial_store_or_the_result_file(
    agent_server: ServerProcess, fake: FakeProvider, site: FixtureSites
) -> None:
    store_marker, file_marker = token("STOPSTORE"), token("STOPFILE")
    store_gate, file_gate = Gate(), Gate()
    shop_required = {**PRODUCTS, "required": ["shop", "products"]}
    fake.script(
        store_marker,
        [navigate(f"{site.url}/"), add_products(BLUE), structured(done("late"), gate=store_gate)],
        when=agent_steps,
    )
    fake.script(
        file_marker, [write_result_file({"note": "half"}), structured(done("late"), gate=file_gate)], when=agent_steps
    )
    try:
        with_store = create(
            agent_server, task=f"{store_marker} List the products on {site.url}/", outputSchema=shop_required
        )
        with_file = create(agent_server, task=f"{file_marker} Take notes.")
        assert store_gate.wait_entered(120) and file_gate.wait_entered(120), "the runs never reached their last step"
        store_stopped = stop(agent_server, with_store["id"], "session")
        file_stopped = stop(agent_server, with_file["id"], "task")
    finally:
        store_gate.open()
        file_gate.open()

    assert store_stopped["status"] == "stopped" and store_stopped["failureKind"] is None
    assert store_stopped["isTaskSuccessful"] is False  # "shop" is required and was never found
    assert store_stopped["output"] == {"shop": None, "products": [BLUE]}
    assert store_stopped["lastStepSummary"] == "Stopped by request. A partial output of 1 items is kept."
    [completion] = completions(messages(agent_server, with_store["id"]))
    assert completion["summary"] == store_stopped["lastStepSummary"]

    assert file_stopped["status"] == "idle" and file_stopped["failureKind"] is None
    assert file_stopped["isTaskSuccessful"] is False  # no schema: nothing to deliver against
    assert file_stopped["output"] == json.dumps({"note": "half"})  # without a schema the output is text
    assert file_stopped["lastStepSummary"] == "Stopped by request. A partial output is kept."


async def test_without_a_store_the_result_file_is_the_output(agent_server: ServerProcess, fake: FakeProvider) -> None:
    """Spec §13.6: prose mode takes the agent's result.json when the done text holds no valid answer."""
    marker = token("RESULTFILE")
    fake.script(
        marker,
        [write_result_file({"answer": 42}), done("The answer is saved in result.json.")],
        when=agent_steps,
    )
    session = create(agent_server, task=f"{marker} Say the answer.", outputSchema=PROSE_SCHEMA)
    finished = wait_until_status(agent_server, session["id"], {"stopped", "error"})
    assert finished["status"] == "stopped", finished["lastStepSummary"]
    assert finished["isTaskSuccessful"] is True and finished["failureKind"] is None
    assert finished["output"] == {"answer": 42}
    assert finished["lastStepSummary"] == "Task completed successfully"
    requests = fake.requests_matching(marker)
    assert not [r for r in requests if "OPENBROWSE-REFORMAT" in r.text]  # valid as written: no reformat call
    judge_call = next(r for r in requests if r.is_review)
    assert "RESULT FILE (result.json" in judge_call.text and '{"answer": 42}' in judge_call.text
    assert [data_of(m)["verdict"] for m in events(messages(agent_server, session["id"]), "judge", "review")] == ["pass"]
