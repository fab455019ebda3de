"""Nodes (spec §26.2, §26.4, §26.7): two real servers on one PostgreSQL database, with disjoint slot ranges on one
host, each list both in ``/health/details`` with what they hold; a node that stops cleanly leaves the list at once;
a run on one node is read, and followed live over SSE, from the other (real Chromium, the fake provider)."""

from __future__ import annotations

import json
import os
import signal
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from httpx_sse import connect_sse

from tests.e2e.agent_support import agent_steps, create, get, messages, token, wait_until_status
from tests.e2e.servers import agent_env, running_server
from tests.fakes.llm_script import Gate, done, navigate, structured
from tests.fakes.llm_server import FakeProvider
from tests.fakes.site import FixtureSites
from tests.support.display import needs_display
from tests.support.postgres import TEST_CLUSTER_SECRET, ThrowawayPostgres
from tests.support.server import ServerProcess
from tests.support.waiting import wait_for

pytestmark = [pytest.mark.e2e]


def details(server: ServerProcess) -> dict[str, Any]:
    response = httpx.get(f"{server.base_url}/health/details", timeout=30)
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def node_ids(server: ServerProcess) -> list[str]:
    return sorted(node["id"] for node in details(server)["cluster"]["nodes"])


@pytest.fixture(scope="module")
def database(throwaway_postgres: ThrowawayPostgres) -> dict[str, str]:
    return {"DATABASE_URL": throwaway_postgres.new_database(), "CLUSTER_SECRET": TEST_CLUSTER_SECRET}


@pytest.fixture(scope="module")
def first(
    tmp_path_factory: pytest.TempPathFactory, database: dict[str, str], fake: FakeProvider
) -> Iterator[ServerProcess]:
    env = agent_env(fake, **database, NODE_ID="node-a")
    with running_server(tmp_path_factory.mktemp("node-a"), env, slots=2) as server:
        yield server


def test_two_nodes_see_each_other_and_a_clean_stop_leaves_at_once(
    first: ServerProcess, tmp_path_factory: pytest.TempPathFactory, database: dict[str, str]
) -> None:
    own = details(first)
    assert own["node"] == {"id": "node-a", "url": f"http://127.0.0.1:{first.port}"}
    [alone] = own["cluster"]["nodes"]
    assert (alone["id"], alone["slots"], alone["busy"], alone["draining"]) == ("node-a", 2, 0, False)
    assert own["cluster"]["queued"] == 0

    with running_server(tmp_path_factory.mktemp("node-b"), database) as second:
        second_id = details(second)["node"]["id"]
        assert second_id.endswith(f":{second.port}"), "the default id is the host name and the port"
        assert node_ids(first) == node_ids(second) == sorted(["node-a", second_id])
        by_id = {node["id"]: node for node in details(first)["cluster"]["nodes"]}
        assert by_id[second_id]["url"] == f"http://127.0.0.1:{second.port}"
        assert by_id[second_id]["slots"] == 1
    # its exit wrote that it left, so the list drops it at once, not a lease later
    assert node_ids(first) == ["node-a"]


def test_sqlite_is_a_cluster_of_one(tmp_path_factory: pytest.TempPathFactory) -> None:
    with running_server(tmp_path_factory.mktemp("node-sqlite"), {"NODE_ID": "alone"}) as server:
        body = details(server)
        assert body["node"]["id"] == "alone"
        assert [node["id"] for node in body["cluster"]["nodes"]] == ["alone"]


@needs_display
@pytest.mark.display
def test_a_run_on_one_node_is_read_and_followed_live_from_another(
    first: ServerProcess,
    tmp_path_factory: pytest.TempPathFactory,
    database: dict[str, str],
    fake: FakeProvider,
    site: FixtureSites,
) -> None:
    marker, gate = token("NODES"), Gate()
    fake.script(
        marker,
        [navigate(f"{site.url}/"), structured(navigate(f"{site.url}/form"), gate=gate), done("Both pages seen.")],
        when=agent_steps,
    )
    with running_server(tmp_path_factory.mktemp("node-reader"), {**database, "NODE_ID": "node-reader"}) as reader:
        session_id = create(first, task=f"{marker} Look at {site.url}/ and then the form.")["id"]
        assert gate.wait_entered(60), "the run's second step never came"
        assert get(reader, session_id)["status"] == "running"
        events: list[tuple[str, dict[str, object]]] = []
        url = f"{reader.v3}/sessions/{session_id}/events"
        with httpx.Client(timeout=60) as client, connect_sse(client, "GET", url) as source:
            for event in source.iter_sse():
                if not event.data:
                    continue
                events.append((event.event, json.loads(event.data)))
                if event.event == "status" and events[-1][1]["status"] == "running" and not gate.is_open:
                    gate.open()  # the stream on the other node is open: let the run finish on its own node
                if event.event == "status" and events[-1][1]["status"] in {"stopped", "idle", "error"}:
                    break
        finished = wait_until_status(first, session_id, {"stopped", "idle"})
        assert get(reader, session_id)["status"] == finished["status"]
        streamed = [payload["id"] for kind, payload in events if kind == "message"]
        assert streamed == [message["id"] for message in messages(reader, session_id)], "every message, live"
        assert streamed == [message["id"] for message in messages(first, session_id)]
        assert events[-1][0] == "status" and events[-1][1]["status"] == finished["status"]


@needs_display
@pytest.mark.display
def test_a_frozen_nodes_run_and_browser_are_typed_by_a_survivor_which_the_woken_node_cannot_overwrite(
    tmp_path_factory: pytest.TempPathFactory, database: dict[str, str], fake: FakeProvider, site: FixtureSites
) -> None:
    marker, gate = token("LOST"), Gate()
    fake.script(
        marker,
        [navigate(f"{site.url}/"), structured(navigate(f"{site.url}/form"), gate=gate), done("Both pages seen.")],
        when=agent_steps,
    )
    quick = {**database, "NODE_LEASE_S": "3", "SHUTDOWN_GRACE_S": "1"}
    frozen_env = agent_env(fake, **quick, NODE_ID="frozen")
    with (
        running_server(tmp_path_factory.mktemp("node-frozen"), frozen_env, slots=2) as frozen,
        running_server(tmp_path_factory.mktemp("node-survivor"), {**quick, "NODE_ID": "survivor"}) as survivor,
    ):
        session_id = create(frozen, task=f"{marker} Look at {site.url}/ and then the form.")["id"]
        assert gate.wait_entered(60), "the run's second step never came"
        created = httpx.post(f"{frozen.v3}/browsers", json={}, timeout=120)
        assert created.status_code == 201, created.text
        browser_id = created.json()["id"]
        assert frozen.process is not None
        os.kill(frozen.process.pid, signal.SIGSTOP)
        try:
            ended = wait_until_status(survivor, session_id, {"error"}, timeout=120)
            browser = wait_for(
                lambda: _ended_browser(survivor, browser_id), 120, what="the frozen node's browser to be ended"
            )
        finally:
            os.kill(frozen.process.pid, signal.SIGCONT)
        assert ended["endReason"] == "runner_lost"
        assert "frozen" in ended["lastStepSummary"]
        assert any("The node frozen" in message["summary"] for message in messages(survivor, session_id))
        assert (browser["status"], browser["state"], browser["endReason"]) == ("stopped", "lost", "runner_lost")
        assert "frozen" not in node_ids(survivor) and "survivor" in node_ids(survivor)

        gate.open()  # the woken node's run may go on: whatever it writes now is refused
        assert frozen.process.wait(120) is not None, "a node the cluster declared gone shuts itself down"
        after = get(survivor, session_id)
        assert (after["status"], after["endReason"]) == ("error", "runner_lost")
        assert after["lastStepSummary"] == ended["lastStepSummary"]
        assert not any("Both pages seen." in message["summary"] for message in messages(survivor, session_id))


def _ended_browser(server: ServerProcess, browser_id: str) -> dict[str, Any] | None:
    body: dict[str, Any] = httpx.get(f"{server.v3}/browsers/{browser_id}", timeout=30).json()
    return body if body["status"] == "stopped" else None
