"""BrowserRepo: typed access to the ``browsers`` table (raw browsers, spec §19.1)."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import fields
from datetime import datetime
from typing import TYPE_CHECKING, Any

from openbrowse.domain.browsers import BrowserRecord, BrowserStatus, BrowserStopReason
from openbrowse.domain.clock import from_wire, to_wire
from openbrowse.domain.ids import BrowserId
from openbrowse.errors import BrowserNotFound

if TYPE_CHECKING:
    import aiosqlite

    from openbrowse.store.db import Database

_COLUMNS = [f.name for f in fields(BrowserRecord)]
EndHook = Callable[["aiosqlite.Connection", BrowserRecord], Awaitable[None]]
"""``hook(conn, ended)``: runs inside the transaction that records a browser's end (the webhook outbox)."""
EndWatcher = Callable[[BrowserRecord], None]
_TIME_COLUMNS = {"started_at", "timeout_at", "finished_at", "queued_at", "queue_expires_at"}


def _to_column(name: str, value: Any) -> Any:
    if name == "metadata":
        return json.dumps(value or {}, ensure_ascii=False)
    if value is None:
        return None
    if name in _TIME_COLUMNS:
        return to_wire(value)
    if name in {"status", "stop_reason"}:
        return str(value)
    if name == "enable_recording":
        return int(bool(value))
    return value


def _time_or_none(value: str | None) -> datetime | None:
    return from_wire(value) if value else None


def _from_row(row: aiosqlite.Row) -> BrowserRecord:
    reason = row["stop_reason"]
    metadata = json.loads(row["metadata"] or "{}")
    return BrowserRecord(
        id=BrowserId(row["id"]),
        status=BrowserStatus(row["status"]),
        timeout_minutes=float(row["timeout_minutes"]),
        started_at=from_wire(row["started_at"]),
        timeout_at=from_wire(row["timeout_at"]),
        finished_at=_time_or_none(row["finished_at"]),
        stop_reason=BrowserStopReason(reason) if reason else None,
        profile_id=row["profile_id"],
        screen_width=row["screen_width"],
        screen_height=row["screen_height"],
        metadata={str(k): str(v) for k, v in metadata.items()} if isinstance(metadata, dict) else {},
        idle_timeout_ms=int(row["idle_timeout_ms"]),
        queued_at=_time_or_none(row["queued_at"]),
        queue_expires_at=_time_or_none(row["queue_expires_at"]),
        enable_recording=bool(row["enable_recording"]),
    )


class BrowserRepo:
    def __init__(self, db: Database) -> None:
        self._db = db
        self._end_hooks: list[EndHook] = []
        self._end_watchers: list[EndWatcher] = []

    def on_end(self, hook: EndHook) -> None:
        """Run ``hook(conn, ended)`` inside the transaction that stops a browser (spec §22.4 ``browser.ended``)."""
        self._end_hooks.append(hook)

    def watch_ends(self, watcher: EndWatcher) -> None:
        """Call ``watcher(ended)`` after a browser's end committed (the metrics)."""
        self._end_watchers.append(watcher)

    async def _ended_in(self, conn: aiosqlite.Connection, browser_ids: list[str]) -> list[BrowserRecord]:
        ended: list[BrowserRecord] = []
        for browser_id in browser_ids:
            rows = list(await conn.execute_fetchall("SELECT * FROM browsers WHERE id = ?", (browser_id,)))
            if rows:
                record = _from_row(rows[0])
                ended.append(record)
                for hook in self._end_hooks:
                    await hook(conn, record)
        return ended

    def _announce(self, ended: list[BrowserRecord]) -> None:
        for record in ended:
            for watcher in self._end_watchers:
                watcher(record)

    async def insert(self, record: BrowserRecord) -> BrowserRecord:
        columns = ", ".join(_COLUMNS)
        marks = ", ".join("?" for _ in _COLUMNS)
        values = tuple(_to_column(name, getattr(record, name)) for name in _COLUMNS)
        async with self._db.transaction() as conn:
            await conn.execute(f"INSERT INTO browsers ({columns}) VALUES ({marks})", values)
        return record

    async def find(self, browser_id: str) -> BrowserRecord | None:
        row = await self._db.fetch_one("SELECT * FROM browsers WHERE id = ?", (browser_id,))
        return _from_row(row) if row is not None else None

    async def get(self, browser_id: str) -> BrowserRecord:
        record = await self.find(browser_id)
        if record is None:
            raise BrowserNotFound()
        return record

    async def mark_started(self, browser_id: BrowserId, *, started_at: datetime, timeout_at: datetime) -> BrowserRecord:
        """A queued browser got its slot: it leaves the queue and its maximum age counts from now."""
        async with self._db.transaction() as conn:
            await conn.execute(
                "UPDATE browsers SET started_at = ?, timeout_at = ?, queue_expires_at = NULL WHERE id = ?",
                (to_wire(started_at), to_wire(timeout_at), browser_id),
            )
        return await self.get(browser_id)

    async def mark_stopped(
        self, browser_id: BrowserId, *, reason: BrowserStopReason, finished_at: datetime
    ) -> BrowserRecord:
        """Record the end of an active browser; a browser already stopped keeps its first end."""
        async with self._db.transaction() as conn:
            cursor = await conn.execute(
                "UPDATE browsers SET status = ?, stop_reason = ?, finished_at = ?, queue_expires_at = NULL"
                " WHERE id = ? AND status = ?",
                (
                    str(BrowserStatus.STOPPED),
                    str(reason),
                    to_wire(finished_at),
                    browser_id,
                    str(BrowserStatus.ACTIVE),
                ),
            )
            ended = await self._ended_in(conn, [browser_id]) if cursor.rowcount else []
        self._announce(ended)
        return await self.get(browser_id)

    async def stop_all_active(self, *, reason: BrowserStopReason, finished_at: datetime) -> int:
        """Mark every ``active`` row stopped (start-up reconciliation); return how many there were."""
        async with self._db.transaction() as conn:
            active = [
                str(row[0])
                for row in await conn.execute_fetchall(
                    "SELECT id FROM browsers WHERE status = ?", (str(BrowserStatus.ACTIVE),)
                )
            ]
            cursor = await conn.execute(
                "UPDATE browsers SET status = ?, stop_reason = ?, finished_at = ?, queue_expires_at = NULL"
                " WHERE status = ?",
                (str(BrowserStatus.STOPPED), str(reason), to_wire(finished_at), str(BrowserStatus.ACTIVE)),
            )
            ended = await self._ended_in(conn, active)
        self._announce(ended)
        return int(cursor.rowcount or 0)

    async def page(
        self, page: int, page_size: int, status: BrowserStatus | None = None
    ) -> tuple[list[BrowserRecord], int]:
        """Newest first; optionally only one status."""
        where, params = ("WHERE status = ?", (str(status),)) if status is not None else ("", ())
        total_row = await self._db.fetch_one(f"SELECT COUNT(*) FROM browsers {where}", params)
        total = int(total_row[0]) if total_row else 0
        rows = await self._db.fetch_all(
            f"SELECT * FROM browsers {where} ORDER BY started_at DESC, rowid DESC LIMIT ? OFFSET ?",
            (*params, page_size, (page - 1) * page_size),
        )
        return [_from_row(row) for row in rows], total
