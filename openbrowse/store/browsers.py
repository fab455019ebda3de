"""BrowserRepo: typed access to the ``browsers`` table (raw browsers, spec §19.1)."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import fields, replace
from datetime import datetime
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa
from sqlalchemy.engine import RowMapping

from openbrowse.domain.browsers import BrowserRecord, BrowserStatus, BrowserStopReason
from openbrowse.domain.clock import from_wire, to_wire
from openbrowse.domain.ids import BrowserId
from openbrowse.errors import BrowserNotFound
from openbrowse.store.ownership import NodeOwnership, where_all
from openbrowse.store.schema import browsers as table

if TYPE_CHECKING:
    from openbrowse.store.db import Database, Tx

_COLUMNS = [f.name for f in fields(BrowserRecord)]
EndHook = Callable[["Tx", BrowserRecord], Awaitable[None]]
"""``hook(conn, ended)``: runs inside the transaction that records a browser's end (the webhook outbox)."""
EndWatcher = Callable[[BrowserRecord], None]
_TIME_COLUMNS = {"started_at", "timeout_at", "finished_at", "queued_at", "queue_expires_at"}


def _to_column(name: str, value: Any) -> Any:
    if name == "metadata":
        return json.dumps(value or {}, ensure_ascii=False)
    if name == "proxy":
        return json.dumps(value, ensure_ascii=False) if value is not None else None
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


def _from_row(row: RowMapping) -> BrowserRecord:
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
        proxy=json.loads(row["proxy"]) if row["proxy"] else None,
        proxy_bytes=int(row["proxy_bytes"] or 0),
    )


def _stopped(reason: BrowserStopReason, finished_at: datetime) -> dict[str, Any]:
    return {
        "status": str(BrowserStatus.STOPPED),
        "stop_reason": str(reason),
        "finished_at": to_wire(finished_at),
        "queue_expires_at": None,
    }


class BrowserRepo:
    def __init__(self, db: Database, ownership: NodeOwnership | None = None) -> None:
        self._db = db
        self._ownership = ownership or NodeOwnership()
        self._end_hooks: list[EndHook] = []
        self._end_watchers: list[EndWatcher] = []

    def on_end(self, hook: EndHook) -> None:
        """Run ``hook(conn, ended)`` inside the transaction that stops a browser (spec §22.4 ``browser.ended``)."""
        self._end_hooks.append(hook)

    def watch_ends(self, watcher: EndWatcher) -> None:
        """Call ``watcher(ended)`` after a browser's end committed (the metrics)."""
        self._end_watchers.append(watcher)

    async def _ended_in(self, conn: Tx, browser_ids: list[str]) -> list[BrowserRecord]:
        ended: list[BrowserRecord] = []
        for browser_id in browser_ids:
            row = (await conn.execute(sa.select(table).where(table.c.id == browser_id))).mappings().first()
            if row is not None:
                record = _from_row(row)
                ended.append(record)
                for hook in self._end_hooks:
                    await hook(conn, record)
        return ended

    def _announce(self, ended: list[BrowserRecord]) -> None:
        for record in ended:
            for watcher in self._end_watchers:
                watcher(record)

    async def insert(self, record: BrowserRecord) -> BrowserRecord:
        if record.owner_node is None and self._ownership.node_id is not None:
            record = replace(record, owner_node=self._ownership.node_id)
        values = {name: _to_column(name, getattr(record, name)) for name in _COLUMNS}
        async with self._db.transaction() as conn:
            await conn.execute(table.insert().values(values))
        return record

    async def find(self, browser_id: str) -> BrowserRecord | None:
        row = await self._db.fetch_one(sa.select(table).where(table.c.id == browser_id))
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
                table.update()
                .where(*where_all(table.c.id == browser_id, self._ownership.fence()))
                .values(started_at=to_wire(started_at), timeout_at=to_wire(timeout_at), queue_expires_at=None)
            )
        return await self.get(browser_id)

    async def mark_stopped(
        self, browser_id: BrowserId, *, reason: BrowserStopReason, finished_at: datetime, proxy_bytes: int = 0
    ) -> BrowserRecord:
        """Record the end of an active browser (and the bytes through its upstream proxy); a browser already
        stopped keeps its first end."""
        async with self._db.transaction() as conn:
            result = await conn.execute(
                table.update()
                .where(
                    *where_all(
                        table.c.id == browser_id,
                        table.c.status == str(BrowserStatus.ACTIVE),
                        self._ownership.fence(),
                    )
                )
                .values({**_stopped(reason, finished_at), "proxy_bytes": proxy_bytes})
            )
            ended = await self._ended_in(conn, [browser_id]) if result.rowcount else []
        self._announce(ended)
        return await self.get(browser_id)

    async def stop_all_active(self, *, reason: BrowserStopReason, finished_at: datetime) -> int:
        """Mark every ``active`` row of this node stopped (start-up reconciliation); return how many there were."""
        mine = where_all(table.c.status == str(BrowserStatus.ACTIVE), self._ownership.mine(table.c.owner_node))
        return await self._stop_where(mine, reason, finished_at)

    async def stop_adopted(self, browser_ids: list[str], *, finished_at: datetime) -> int:
        """End the browsers this node adopted from a node that died (spec §26.5): ``lost``, ``runner_lost``."""
        if not browser_ids:
            return 0
        adopted = [table.c.status == str(BrowserStatus.ACTIVE), table.c.id.in_(browser_ids)]
        return await self._stop_where(adopted, BrowserStopReason.NODE_LOST, finished_at)

    async def _stop_where(self, where: list[Any], reason: BrowserStopReason, finished_at: datetime) -> int:
        async with self._db.transaction() as conn:
            active = [str(found) for found in (await conn.execute(sa.select(table.c.id).where(*where))).scalars()]
            result = await conn.execute(table.update().where(*where).values(_stopped(reason, finished_at)))
            ended = await self._ended_in(conn, active)
        self._announce(ended)
        return int(result.rowcount or 0)

    async def page(
        self, page: int, page_size: int, status: BrowserStatus | None = None
    ) -> tuple[list[BrowserRecord], int]:
        """Newest first; optionally only one status."""
        where = [table.c.status == str(status)] if status is not None else []
        total = int(await self._db.scalar(sa.select(sa.func.count()).select_from(table).where(*where)) or 0)
        rows = await self._db.fetch_all(
            sa.select(table)
            .where(*where)
            .order_by(table.c.started_at.desc(), self._db.insertion_order(table).desc())
            .limit(page_size)
            .offset((page - 1) * page_size)
        )
        return [_from_row(row) for row in rows], total
