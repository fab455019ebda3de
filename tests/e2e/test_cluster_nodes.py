"""Nodes (spec §26.2, §26.7): two real servers on one PostgreSQL database, with disjoint slot ranges on one host,
each list both in ``/health/details`` with what they hold; a node that stops cleanly leaves the list at once."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.e2e.servers import running_server
from tests.support.postgres import TEST_CLUSTER_SECRET, ThrowawayPostgres
from tests.support.server import ServerProcess

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
def first(tmp_path_factory: pytest.TempPathFactory, database: dict[str, str]) -> Iterator[ServerProcess]:
    with running_server(tmp_path_factory.mktemp("node-a"), {**database, "NODE_ID": "node-a"}, slots=2) as server:
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
