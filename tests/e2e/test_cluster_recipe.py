"""The deployment recipe (spec §26.7): Debian's nginx, configured from ``deploy/nginx.conf``, in front of two real
nodes on one PostgreSQL. Through it: both nodes are listed, a session run is followed live over SSE (events arrive
while the run waits, so nothing buffers them), and a raw browser is driven by Playwright over its ``cdpUrl``, a
WebSocket that must cross nginx."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from httpx_sse import connect_sse
from playwright.async_api import async_playwright

from tests.e2e.agent_support import agent_steps, token
from tests.e2e.servers import agent_env, running_server
from tests.fakes.llm_script import Gate, done, navigate, structured
from tests.fakes.llm_server import FakeProvider
from tests.fakes.site import FixtureSites
from tests.support.ci_gate import required
from tests.support.display import needs_display
from tests.support.nginx import MISSING, nginx_binary, nginx_in_front
from tests.support.postgres import TEST_CLUSTER_SECRET, ThrowawayPostgres

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.display,
    needs_display,
    required(None if nginx_binary() else MISSING),
]


@pytest.fixture(scope="module")
def front(
    tmp_path_factory: pytest.TempPathFactory, throwaway_postgres: ThrowawayPostgres, fake: FakeProvider
) -> Iterator[str]:
    env = agent_env(fake, DATABASE_URL=throwaway_postgres.new_database(), CLUSTER_SECRET=TEST_CLUSTER_SECRET)
    with (
        running_server(tmp_path_factory.mktemp("recipe-node1"), {**env, "NODE_ID": "node1"}) as node1,
        running_server(tmp_path_factory.mktemp("recipe-node2"), {**env, "NODE_ID": "node2"}) as node2,
        nginx_in_front(Path(tmp_path_factory.mktemp("recipe-nginx")), [node1.port, node2.port]) as url,
    ):
        yield url


def test_both_nodes_answer_behind_the_recipe(front: str) -> None:
    assert httpx.get(f"{front}/health", timeout=30).json()["status"] == "ok"
    details = httpx.get(f"{front}/health/details", timeout=30).json()
    assert sorted(node["id"] for node in details["cluster"]["nodes"]) == ["node1", "node2"]


def test_a_run_is_followed_live_over_sse_through_nginx(front: str, fake: FakeProvider, site: FixtureSites) -> None:
    marker, gate = token("RECIPE"), Gate()
    fake.script(
        marker,
        [navigate(f"{site.url}/"), structured(navigate(f"{site.url}/form"), gate=gate), done("Seen through nginx.")],
        when=agent_steps,
    )
    created = httpx.post(f"{front}/v3/sessions", json={"task": f"{marker} Look at {site.url}/."}, timeout=60)
    assert created.status_code == 200, created.text
    statuses: list[str] = []
    url = f"{front}/v3/sessions/{created.json()['id']}/events"
    with httpx.Client(timeout=60) as client, connect_sse(client, "GET", url) as source:
        for event in source.iter_sse():
            if event.event != "status":
                continue
            statuses.append(json.loads(event.data)["status"])
            if statuses[-1] == "running" and not gate.is_open:
                assert gate.wait_entered(60)
                gate.open()  # an event reached us while the run waited: nginx did not hold it back
            if statuses[-1] in {"stopped", "idle", "error"}:
                break
    assert "running" in statuses and statuses[-1] == "stopped", statuses


async def test_playwright_drives_a_raw_browser_over_its_cdp_url_through_nginx(front: str, site: FixtureSites) -> None:
    async with httpx.AsyncClient(timeout=120) as client:
        # the run of the test before may still be releasing this node's slot: wait for it, as a user would
        created = await client.post(f"{front}/v3/browsers", json={"waitForCapacityMs": 30000})
        assert created.status_code == 201, created.text
        browser: dict[str, Any] = created.json()
        assert browser["cdpUrl"].startswith(front.replace("http://", "ws://")), browser["cdpUrl"]
        try:
            async with async_playwright() as playwright:
                remote = await playwright.chromium.connect_over_cdp(browser["cdpUrl"])
                page = remote.contexts[0].pages[0] if remote.contexts[0].pages else await remote.contexts[0].new_page()
                await page.goto(f"{site.url}/")
                assert await page.title()
                await remote.close()
        finally:
            await client.patch(f"{front}/v3/browsers/{browser['id']}", json={"action": "stop"})
