"""WebhookDelivery against a real local receiver and real SQLite, with the clock in the test's hands: what counts as
delivered, what is retried and when, when it gives up, and that the signature travels (spec §22.4)."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import AsyncIterator, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from openbrowse.config import Settings
from openbrowse.domain.clock import utc_now
from openbrowse.domain.ids import SessionId
from openbrowse.domain.sessions import SessionRecord, SessionStatus
from openbrowse.domain.webhooks import verify
from openbrowse.network.policy import NetworkRules
from openbrowse.sessions.webhooks import WebhookDelivery
from openbrowse.store.db import Database
from openbrowse.store.outbox import WebhookOutbox
from openbrowse.store.sessions import SessionRepo

SECRET = "s3cret"
SESSION = SessionId("00000000-0000-4000-8000-0000000000bb")


class Hook:
    """Answers each POST with the next of ``answers`` (then 200); ``hang`` seconds before answering."""

    def __init__(self, answers: list[int], hang: float = 0.0) -> None:
        self.answers, self.hang = answers, hang
        self.requests: list[tuple[dict[str, str], bytes]] = []
        hook = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length", "0")))
                hook.requests.append((dict(self.headers), body))
                time.sleep(hook.hang)
                status = hook.answers.pop(0) if hook.answers else 200
                self.send_response(status)
                if status in (301, 302, 307):
                    self.send_header("location", "http://127.0.0.1:9/elsewhere")
                self.send_header("content-length", "0")
                self.end_headers()

            def log_message(self, format: str, *args: Any) -> None:
                return

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/hook"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class Clock:
    def __init__(self) -> None:
        self.now = time.time()

    def __call__(self) -> float:
        return self.now


class Results:
    def __init__(self) -> None:
        self.seen: list[tuple[str, str]] = []
        self.changed = asyncio.Event()

    def __call__(self, event_type: str, outcome: str, reason: str) -> None:
        self.seen.append((outcome, reason))
        self.changed.set()

    async def wait_for(self, count: int) -> list[tuple[str, str]]:
        async with asyncio.timeout(10):
            while len(self.seen) < count:
                self.changed.clear()
                await self.changed.wait()
        return self.seen


@pytest.fixture
def hook_factory() -> Iterator[Any]:
    hooks: list[Hook] = []

    def make(answers: list[int], hang: float = 0.0) -> Hook:
        hooks.append(Hook(answers, hang))
        return hooks[-1]

    yield make
    for hook in hooks:
        hook.close()


@pytest.fixture
async def db(tmp_path: Path) -> AsyncIterator[Database]:
    async with Database(tmp_path / "store.db") as database:
        yield database


async def announce(db: Database, url: str, clock: Clock) -> WebhookOutbox:
    """One status change of one session, with ``url`` as its webhook target."""
    sessions, outbox = SessionRepo(db), WebhookOutbox(db, url, epoch=clock)
    sessions.on_change(outbox.session_changed)
    now = utc_now()
    record = SessionRecord(SESSION, SessionStatus.CREATED, "m", "m", "none", created_at=now, updated_at=now)
    await sessions.insert(record)
    await sessions.update(SESSION, status=SessionStatus.RUNNING)
    return outbox


def settings(**changes: object) -> Settings:
    base: dict[str, object] = {
        "WEBHOOK_SECRET": SECRET,
        "WEBHOOK_RETRY_BASE_S": 5,
        "WEBHOOK_RETRY_MAX_S": 20,
        "WEBHOOK_RETRY_FOR_S": 60,
        "WEBHOOK_TIMEOUT_S": 0.5,
    }
    return Settings(**{**base, **changes})  # type: ignore[arg-type]


async def test_retried_with_backoff_then_delivered_signed(db: Database, hook_factory: Any) -> None:
    hook, clock, results = hook_factory([500, 302]), Clock(), Results()
    outbox = await announce(db, hook.url, clock)
    async with WebhookDelivery(outbox, settings(), NetworkRules(), on_result=results, epoch=clock) as worker:
        assert await results.wait_for(1) == [("retry", "status")]
        assert await outbox.next_due() == pytest.approx(clock.now + 5)
        clock.now += 5
        worker.wake()
        assert (await results.wait_for(2))[1] == ("retry", "status")  # a redirect is not followed
        assert await outbox.next_due() == pytest.approx(clock.now + 10)  # doubled
        clock.now += 10
        worker.wake()
        assert (await results.wait_for(3))[2] == ("delivered", "")
    assert await outbox.pending_count() == 0
    bodies = {body for _, body in hook.requests}
    assert len(hook.requests) == 3 and len(bodies) == 1  # the same event each time
    for headers, body in hook.requests:
        assert verify(SECRET, headers["X-Browser-Use-Timestamp"], body, headers["X-Browser-Use-Signature"])
        assert json.loads(body)["id"] == headers["X-OpenBrowse-Event-Id"]


async def test_gives_up_after_the_retry_window(db: Database, hook_factory: Any) -> None:
    hook, clock, results = hook_factory([], hang=2.0), Clock(), Results()
    outbox = await announce(db, hook.url, clock)
    async with WebhookDelivery(outbox, settings(), NetworkRules(), on_result=results, epoch=clock) as worker:
        assert await results.wait_for(1) == [("retry", "timeout")]  # slower than WEBHOOK_TIMEOUT_S
        clock.now += 56  # the next retry would fall after the 60 s window
        worker.wake()
        assert (await results.wait_for(2))[1] == ("failed", "timeout")
    assert await outbox.pending_count() == 0 and await outbox.next_due() is None


async def test_metadata_target_refused_without_a_connection(db: Database) -> None:
    clock, results = Clock(), Results()
    outbox = await announce(db, "http://169.254.169.254/latest/meta-data", clock)
    async with WebhookDelivery(outbox, settings(), NetworkRules(), on_result=results, epoch=clock):
        assert await results.wait_for(1) == [("failed", "refused")]
    assert await outbox.pending_count() == 0
