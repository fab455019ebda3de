"""``GET /metrics`` (spec §19.3): Prometheus text that a Prometheus parser reads, behind the API key, whose counters
move as a session runs (real server, real Chromium, the fake provider, the official SDK as the caller).
JSON logs (``LOG_FORMAT=json``) are checked on the same run: every log line is one object, the run's tagged."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

import pytest
from browser_use_sdk.v3 import AsyncBrowserUse
from prometheus_client.parser import text_string_to_metric_families

from tests.e2e.agent_support import token
from tests.fakes.llm_script import Fault
from tests.fakes.llm_server import FakeProvider
from tests.support import loopback
from tests.support.display import needs_display
from tests.support.polling import wait_for_status
from tests.support.server import ServerProcess, wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.display, needs_display]

KEY = "local-key"
TEXT_LOG_LINE = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d+ ")
"""The text format's lines (``LOG_FORMAT=text``): none may appear with ``json``."""


def scrape(server: ServerProcess) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    response = loopback.get(f"{server.base_url}/metrics", headers={"Authorization": f"Bearer {KEY}"}, timeout=30)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/plain")
    samples: dict[tuple[str, tuple[tuple[str, str], ...]], float] = {}
    for family in text_string_to_metric_families(response.text):
        for sample in family.samples:
            samples[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return samples


def value(samples: dict[tuple[str, tuple[tuple[str, str], ...]], float], name: str, **labels: str) -> float:
    return sum(v for (n, ls), v in samples.items() if n == name and all((k, w) in ls for k, w in labels.items()))


async def test_metrics_move_as_a_session_runs_and_logs_are_json(
    start_server: Any, fake: FakeProvider, sdk: Callable[[ServerProcess], AsyncBrowserUse]
) -> None:
    server = start_server(API_KEY=KEY, LOG_FORMAT="json", MAX_CONCURRENT_SESSIONS=2, **fake.env())
    assert loopback.get(f"{server.base_url}/metrics", timeout=30).status_code == 401

    before = scrape(server)
    assert value(before, "openbrowse_slots", state="free") == 2
    assert value(before, "openbrowse_queue_length") == 0
    assert value(before, "process_resident_memory_bytes") > 0
    assert value(before, "openbrowse_runs_total") == 0
    details = loopback.get(f"{server.base_url}/health/details", headers={"Authorization": f"Bearer {KEY}"}, timeout=30)
    node_id = details.json()["node"]["id"]
    # stall sites appear once the loop stalls; every series says which node served it (spec §26.7)
    assert ("openbrowse_loop_lag_p99_seconds", (("node", node_id),)) in before
    assert all(dict(labels).get("node") == node_id for _, labels in before), "a series without its node label"

    client = sdk(server)
    created = await client.sessions.create("Say hello and finish.")
    finished = await wait_for_status(client, created.id, {"stopped", "error"}, timeout=120)
    assert finished.status.value == "stopped"

    after = scrape(server)
    assert (
        value(after, "openbrowse_sessions", status="stopped")
        == value(before, "openbrowse_sessions", status="stopped") + 1
    )
    assert value(after, "openbrowse_runs_total", status="stopped") == 1
    assert value(after, "openbrowse_run_duration_seconds_count") == 1
    assert value(after, "openbrowse_end_reasons_total", kind="session", end_reason="closed") == 1
    assert value(after, "openbrowse_run_duration_seconds_sum") > 0
    assert value(after, "openbrowse_step_duration_seconds_count") >= 1
    tokens = value(after, "openbrowse_llm_input_tokens_total")
    assert tokens == int(finished.total_input_tokens or 0) > 0
    by_model = [labels for (name, labels), _ in after.items() if name == "openbrowse_llm_input_tokens_total"]
    assert by_model and all(dict(labels)["model"] for labels in by_model), by_model
    assert value(after, "openbrowse_llm_cost_usd_total") == pytest.approx(float(finished.llm_cost_usd or 0))
    # the slot is torn down after the status is written: it comes back free
    wait_until(lambda: value(scrape(server), "openbrowse_slots", state="free") == 2, 30, what="the slot freed")

    # a run the provider refuses ends with a failureKind, counted by kind
    marker = token("METRICS-FAIL")
    fake.script(marker, [Fault.status(401).forever()])
    broken = await client.sessions.create(f"{marker} Say hello.")
    await wait_for_status(client, broken.id, {"stopped", "error"}, timeout=120)
    headers = {"Authorization": f"Bearer {KEY}"}
    failure_kind = loopback.get(f"{server.v3}/sessions/{broken.id}", headers=headers, timeout=30).json()["failureKind"]
    assert failure_kind
    final = scrape(server)
    assert value(final, "openbrowse_failures_total", failure_kind=failure_kind) == 1
    assert value(final, "openbrowse_runs_total") == 2

    lines = [line for line in server.log().splitlines() if line.strip()]
    assert not [line for line in lines if TEXT_LOG_LINE.match(line)]
    entries = [json.loads(line) for line in lines if line.startswith("{")]
    assert entries and all(isinstance(entry, dict) for entry in entries)
    assert all({"time", "level", "logger", "message"} <= set(entry) for entry in entries)
    assert any(entry.get("sessionId") == str(created.id) for entry in entries), entries[-20:]
