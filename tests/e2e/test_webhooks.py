"""Webhooks (spec §22.4): signed as Browser Use signs them, durable across a restart, retried, policy-checked.

A real receiver (``http.server`` on a local port, allowed through ``NETWORK_ALLOWED_HOSTS`` under the default
``public-only`` policy) checks every request with Browser Use's published verifier.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from browser_use_sdk.v3 import BrowserUse
from prometheus_client.parser import text_string_to_metric_families

from tests.e2e.agent_support import create, get, wait_until_status
from tests.fakes.llm_server import FakeProvider
from tests.support import loopback
from tests.support.display import needs_display
from tests.support.server import ServerProcess, wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300)]

SECRET = "whsec-e2e-secret"


def bu_verify(body: bytes, signature: str, timestamp: str, secret: str) -> bool:
    """Browser Use's published receiver check (5-minute window included), as a user would paste it."""
    try:
        ts = int(timestamp)
    except (ValueError, TypeError):
        return False
    if abs(time.time() - ts) > 300:
        return False
    payload = json.loads(body)
    message = f"{timestamp}.{json.dumps(payload, separators=(',', ':'), sort_keys=True)}"
    expected = hmac.new(secret.encode(), message.encode(), hashlib.sha256).hexdigest()
    return hmac.compare_digest(expected, signature)


@dataclass
class Delivery:
    event: dict[str, Any]
    verified: bool
    answered: int


@dataclass
class Receiver:
    """A webhook endpoint: answers ``status`` (500 until told otherwise) and records every request."""

    status: int = 500
    deliveries: list[Delivery] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    server: ThreadingHTTPServer | None = None

    @property
    def port(self) -> int:
        assert self.server is not None
        return int(self.server.server_address[1])

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/hooks/openbrowse"

    def start(self) -> Receiver:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length", "0")))
                verified = bu_verify(
                    body,
                    self.headers.get("X-Browser-Use-Signature", ""),
                    self.headers.get("X-Browser-Use-Timestamp", ""),
                    SECRET,
                )
                with receiver.lock:
                    answer = receiver.status
                    receiver.deliveries.append(Delivery(json.loads(body), verified, answer))
                self.send_response(answer)
                self.send_header("content-length", "0")
                self.end_headers()

            def log_message(self, format: str, *args: Any) -> None:
                return

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def close(self) -> None:
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()

    def seen(self) -> list[Delivery]:
        with self.lock:
            return list(self.deliveries)

    def accept(self) -> None:
        with self.lock:
            self.status = 200


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    found = Receiver().start()
    yield found
    found.close()


def webhook_env(fake: FakeProvider, *receivers: Receiver, **extra: object) -> dict[str, object]:
    return {
        **fake.env(),
        "NETWORK_POLICY": "public-only",
        "NETWORK_ALLOWED_HOSTS": ",".join(f"127.0.0.1:{r.port}" for r in receivers),
        "WEBHOOK_SECRET": SECRET,
        "WEBHOOK_RETRY_BASE_S": "0.2",
        "WEBHOOK_RETRY_MAX_S": "0.5",
        **extra,
    }


def statuses_for(deliveries: list[Delivery], session_id: str) -> list[str]:
    return [
        d.event["payload"]["status"]
        for d in deliveries
        if d.event["type"] == "agent.task.status_update" and d.event["payload"]["session_id"] == session_id
    ]


def metric(server: ServerProcess, name: str, **labels: str) -> float:
    text = loopback.get(f"{server.base_url}/metrics", timeout=30).text
    total = 0.0
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == name and all(sample.labels.get(k) == v for k, v in labels.items()):
                total += sample.value
    return total


@needs_display
@pytest.mark.display
def test_every_event_arrives_signed_at_least_once_across_a_restart(
    start_server: Any, fake: FakeProvider, receiver: Receiver, tmp_path: Path
) -> None:
    own = Receiver(status=200).start()  # the session's own webhookUrl, healthy throughout
    try:
        home = tmp_path / "webhook-home"
        env = webhook_env(fake, receiver, own, WEBHOOK_URL=receiver.url)
        first = start_server(home, **env)
        # the official SDK passes extra fields through: webhookUrl is ours
        with BrowserUse(api_key="local-key", base_url=first.v3, max_retries=0) as client:
            session_id = str(client.sessions.create("Say hello and finish.", webhookUrl=own.url).id)
        finished = wait_until_status(first, session_id, {"stopped", "error", "idle"})
        assert finished["status"] == "stopped", finished  # a receiver answering 500 never changes the run

        def retried_stop() -> bool:
            return statuses_for(receiver.seen(), session_id).count("stopped") >= 2

        wait_until(retried_stop, 60, what="the stopped event retried after a 500")
        wait_until(lambda: "stopped" in statuses_for(own.seen(), session_id), 60, what="the session's own hook")
        assert all(d.answered == 500 for d in receiver.seen())
        first.stop()

        refused_ids = {d.event["id"] for d in receiver.seen()}
        assert {"running", "stopped"} <= set(statuses_for(receiver.seen(), session_id))
        receiver.accept()
        second = start_server(home, **env)

        def all_accepted() -> bool:
            accepted = {d.event["id"] for d in receiver.seen() if d.answered == 200}
            return refused_ids <= accepted

        wait_until(all_accepted, 60, what="every event delivered after the restart")
        assert all(d.verified for d in receiver.seen() + own.seen()), [d for d in receiver.seen() if not d.verified]
        event = next(d.event for d in receiver.seen() if d.event["payload"].get("status") == "stopped")
        assert set(event) == {"id", "type", "timestamp", "payload"}
        assert event["payload"]["task_id"] == session_id
        assert event["payload"]["metadata"]["previousStatus"] == "running"
        assert event["payload"]["metadata"]["isTaskSuccessful"] is True
        assert {"running", "stopped"} <= set(statuses_for(own.seen(), session_id))
        assert metric(second, "openbrowse_webhook_deliveries_total", outcome="delivered") >= len(refused_ids)
        assert get(second, session_id)["status"] == "stopped"
    finally:
        own.close()


def test_refused_targets_fail_for_good_and_bad_urls_get_422(
    start_server: Any, fake: FakeProvider, receiver: Receiver
) -> None:
    server = start_server(**webhook_env(fake, receiver, WEBHOOK_URL="http://169.254.169.254/latest/hook"))
    bad = loopback.post(f"{server.v3}/sessions", json={"webhookUrl": "ftp://example.com/x"}, timeout=30)
    assert bad.status_code == 422 and "webhook URL" in str(bad.json()["detail"])

    # a shell stopped by hand changes status without a browser: one event for each target
    shell = create(server, webhookUrl="http://10.1.2.3/private-hook")
    stopped = loopback.post(f"{server.v3}/sessions/{shell['id']}/stop", timeout=30)
    assert stopped.status_code == 200, stopped.text

    def refused_twice() -> bool:
        return metric(server, "openbrowse_webhook_failures_total", reason="refused") >= 2

    wait_until(refused_twice, 30, what="both targets refused")
    assert metric(server, "openbrowse_webhook_deliveries_total", outcome="failed") >= 2
    assert metric(server, "openbrowse_webhooks_pending") == 0  # recorded as failed, never retried
    assert get(server, shell["id"])["status"] == "stopped"
    log = server.log()
    assert "169.254.169.254" in log and "refused for good" in log
    assert receiver.seen() == []


@needs_display
@pytest.mark.display
def test_pause_and_raw_browser_end_are_announced(start_server: Any, fake: FakeProvider) -> None:
    hook = Receiver(status=200).start()
    try:
        server = start_server(**webhook_env(fake, hook, WEBHOOK_URL=hook.url))
        session = create(server, task="Say parked.", keepAlive=True)
        assert wait_until_status(server, session["id"], {"idle", "stopped", "error"})["status"] == "idle"
        paused = loopback.post(f"{server.v3}/sessions/{session['id']}/pause", json={"reason": "my turn"}, timeout=30)
        assert paused.status_code == 200 and paused.json()["pause"]["state"] == "paused"

        def pause_announced() -> list[Delivery]:
            return [d for d in hook.seen() if d.event["type"] == "session.paused"]

        wait_until(pause_announced, 30, what="session.paused delivered")
        [announced] = pause_announced()
        assert announced.verified
        assert announced.event["payload"]["session_id"] == session["id"]
        assert announced.event["payload"]["metadata"]["reason"] == "my turn"
        assert announced.event["payload"]["metadata"]["by"] == "user"

        browser = loopback.post(f"{server.v3}/browsers", json={}, timeout=60).json()
        stopped = loopback.patch(f"{server.v3}/browsers/{browser['id']}", json={"action": "stop"}, timeout=60)
        assert stopped.status_code == 200, stopped.text

        def browser_announced() -> list[Delivery]:
            return [d for d in hook.seen() if d.event["type"] == "browser.ended"]

        wait_until(browser_announced, 30, what="browser.ended delivered")
        [ended] = browser_announced()
        assert ended.verified and ended.event["payload"]["browser_id"] == browser["id"]
        assert ended.event["payload"]["metadata"]["endReason"] == "closed"
        assert len({d.event["id"] for d in hook.seen()}) == len(hook.seen())  # every event its own id, sent once
    finally:
        hook.close()
