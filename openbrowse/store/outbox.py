"""WebhookOutbox: the durable queue of webhook deliveries (spec §22.4), table ``webhook_outbox``.

Rows are written inside the transaction that records the change they announce (:meth:`WebhookOutbox.session_changed`
and :meth:`WebhookOutbox.browser_ended` are the repos' in-transaction hooks), so a change is never committed without
its webhook, and a webhook never goes out for a change that rolled back. A row stays ``pending`` until a receiver
answers 2xx (``delivered``) or it is given up (``failed``): a restart resumes every pending row.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa

from openbrowse.domain.clock import Clock, utc_now
from openbrowse.domain.webhooks import browser_ended_event, canonical_json, session_events
from openbrowse.store.schema import webhook_outbox as table

if TYPE_CHECKING:
    from openbrowse.domain.browsers import BrowserRecord
    from openbrowse.domain.sessions import SessionRecord
    from openbrowse.store.db import Database, Tx

PENDING = "pending"
DELIVERED = "delivered"
FAILED = "failed"
ERROR_LIMIT = 500
"""Characters of the last error kept on a row."""
SESSION_EVENT_FIELDS = frozenset({"status", "pause"})
"""The session fields whose change ``session_events`` announces: :meth:`WebhookOutbox.session_changed` is the
sessions' hook for these alone."""


@dataclass(frozen=True, slots=True)
class OutboxRow:
    seq: int
    event_id: str
    event_type: str
    target_url: str
    body: str
    attempts: int
    created_at: float
    """Epoch seconds when the event happened: retries stop ``WEBHOOK_RETRY_FOR_S`` after it."""


class WebhookOutbox:
    """Writes rows with the changes they announce; the delivery worker reads and settles them."""

    def __init__(
        self,
        db: Database,
        default_url: str | None,
        *,
        clock: Clock = utc_now,
        epoch: Callable[[], float] = time.time,
    ) -> None:
        self._db = db
        self._default_url = default_url
        self._clock = clock
        self._epoch = epoch

    def _targets(self, own_url: str | None) -> list[str]:
        return list(dict.fromkeys(url for url in (self._default_url, own_url) if url))

    # -- in-transaction hooks ------------------------------------------------------------------------------------
    async def session_changed(self, conn: Tx, before: SessionRecord, after: SessionRecord) -> None:
        targets = self._targets(after.webhook_url)
        if targets:
            await self._add(conn, session_events(before, after, self._clock()), targets)

    async def browser_ended(self, conn: Tx, record: BrowserRecord) -> None:
        targets = self._targets(None)
        if targets:
            await self._add(conn, [browser_ended_event(record, self._clock())], targets)

    async def _add(self, conn: Tx, events: Sequence[dict[str, Any]], targets: list[str]) -> None:
        now = self._epoch()
        rows = [
            {
                "event_id": event["id"],
                "event_type": event["type"],
                "target_url": target,
                "body": canonical_json(event),
                "state": PENDING,
                "attempts": 0,
                "created_at": now,
                "next_attempt_at": now,
            }
            for event in events
            for target in targets
        ]
        if rows:
            await conn.execute(table.insert(), rows)

    # -- the delivery worker's side ------------------------------------------------------------------------------
    async def due(self, now: float, limit: int) -> list[OutboxRow]:
        """Pending rows whose next attempt is due, oldest first."""
        c = table.c
        rows = await self._db.fetch_all(
            sa.select(c.seq, c.event_id, c.event_type, c.target_url, c.body, c.attempts, c.created_at)
            .where(c.state == PENDING, c.next_attempt_at <= now)
            .order_by(c.seq)
            .limit(limit)
        )
        return [
            OutboxRow(
                seq=int(row["seq"]),
                event_id=str(row["event_id"]),
                event_type=str(row["event_type"]),
                target_url=str(row["target_url"]),
                body=str(row["body"]),
                attempts=int(row["attempts"]),
                created_at=float(row["created_at"]),
            )
            for row in rows
        ]

    async def next_due(self) -> float | None:
        """When the earliest pending row is due (epoch seconds), or None when nothing is pending."""
        due = await self._db.scalar(sa.select(sa.func.min(table.c.next_attempt_at)).where(table.c.state == PENDING))
        return float(due) if due is not None else None

    async def delivered(self, seq: int, attempts: int) -> None:
        await self._settle(seq, DELIVERED, attempts, None)

    async def failed(self, seq: int, attempts: int, error: str) -> None:
        await self._settle(seq, FAILED, attempts, error)

    async def retry_at(self, seq: int, attempts: int, when: float, error: str) -> None:
        async with self._db.transaction() as conn:
            await conn.execute(
                table.update()
                .where(table.c.seq == seq)
                .values(attempts=attempts, next_attempt_at=when, last_error=error[:ERROR_LIMIT])
            )

    async def _settle(self, seq: int, state: str, attempts: int, error: str | None) -> None:
        async with self._db.transaction() as conn:
            await conn.execute(
                table.update()
                .where(table.c.seq == seq)
                .values(
                    state=state,
                    attempts=attempts,
                    finished_at=self._epoch(),
                    last_error=error[:ERROR_LIMIT] if error else None,
                )
            )

    async def pending_count(self) -> int:
        count = await self._db.scalar(sa.select(sa.func.count()).select_from(table).where(table.c.state == PENDING))
        return int(count or 0)

    async def prune(self, finished_before: float) -> int:
        """Forget settled rows finished before ``finished_before``; pending rows are never pruned."""
        async with self._db.transaction() as conn:
            result = await conn.execute(
                table.delete().where(table.c.state != PENDING, table.c.finished_at < finished_before)
            )
            return int(result.rowcount or 0)
