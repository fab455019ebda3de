"""SessionRepo: typed access to the ``sessions`` table."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Collection, Mapping
from dataclasses import fields
from decimal import Decimal
from typing import TYPE_CHECKING, Any, TypeVar

import sqlalchemy as sa
from pydantic import TypeAdapter

from openbrowse.domain.clock import Clock, from_wire, to_wire, utc_now
from openbrowse.domain.ids import SessionId
from openbrowse.domain.redaction import REDACTORS
from openbrowse.domain.secrets import normalize_stored
from openbrowse.domain.sessions import SessionRecord, SessionStatus
from openbrowse.errors import NodeFenced, SessionNotFound
from openbrowse.store.change_notices import ChangeNotices, notices_of
from openbrowse.store.ownership import NodeOwnership, where_all
from openbrowse.store.read_cache import ReadCache
from openbrowse.store.schema import sessions as table

if TYPE_CHECKING:
    from openbrowse.store.db import Database, Tx

_JSON_COLUMNS = {"output", "output_schema", "sensitive_data", "pause", "proxy"}
_BOOL_COLUMNS = {"keep_alive", "browser_live", "enable_recording", "cache_script", "auto_heal"}
_DECIMAL_COLUMNS = {"max_cost_usd", "allowance_usd", "llm_cost_usd", "captcha_cost_usd", "proxy_cost_usd"}
_TIME_COLUMNS = ("created_at", "updated_at")
T = TypeVar("T")
_COLUMNS = [f.name for f in fields(SessionRecord)]
_RECORD = TypeAdapter(SessionRecord)
_REDACTED_COLUMNS = ("output", "last_step_summary")
"""Text a run writes: the session's secrets never reach the row (spec §25.3)."""
_QUEUE_LOCK_KEY = 0x0B_5E_51
"""PostgreSQL: the advisory lock around drawing the next queue place (SQLite serialises writes already)."""
VIEW_CACHE_SIZE = 256
NOTICE_KIND = "session"
"""Rows kept for :meth:`SessionRepo.view` (the sessions being polled; a few KiB each)."""


ChangeHook = Callable[["Tx", SessionRecord, SessionRecord], Awaitable[None]]
"""``hook(conn, before, after)``: runs inside the transaction of an update (writes that must commit with it)."""
ChangeWatcher = Callable[[SessionRecord, SessionRecord], None]
"""``watcher(before, after)``: called after an update committed."""
Concerns = Collection[str] | None
"""The fields whose change an observer acts on; None: every update."""


class _NextInQueue:
    def __repr__(self) -> str:
        return "NEXT_IN_QUEUE"


NEXT_IN_QUEUE: Any = _NextInQueue()
"""Pass as ``queue_seq`` to :meth:`SessionRepo.update`: the next place in the queue, drawn inside the write."""


def _to_column(name: str, value: Any) -> Any:
    if value is None:
        return None
    if name in _JSON_COLUMNS:
        return json.dumps(value, ensure_ascii=False)
    if name in _BOOL_COLUMNS:
        return int(bool(value))
    if name == "is_task_successful":
        return int(bool(value))
    if name in _DECIMAL_COLUMNS:
        return str(value)
    if name in _TIME_COLUMNS:
        return to_wire(value)
    if name in {"status", "failure_kind", "end_reason"}:
        return str(value)
    return value


def _next_queue_seq() -> Any:
    inner = table.alias("queued")
    return sa.select(sa.func.coalesce(sa.func.max(inner.c.queue_seq), 0) + 1).scalar_subquery()


def _from_row(row: Mapping[Any, Any]) -> SessionRecord:
    """Decode the JSON columns, then let pydantic convert the rest (0/1 → bool, text → Decimal or enum).

    NULLs are left out so the record's defaults apply; the timestamps are parsed here to keep the stdlib's
    ``timezone.utc`` (pydantic would attach its own tzinfo type)."""
    values = {name: value for name, value in row.items() if value is not None}
    for name in _JSON_COLUMNS.intersection(values):
        values[name] = json.loads(values[name])
    for name in _TIME_COLUMNS:
        values[name] = from_wire(values[name])
    values["sensitive_data"] = normalize_stored(values.get("sensitive_data"), values.get("task"))
    return _RECORD.validate_python(values)


async def _read_in(conn: Tx, session_id: str) -> SessionRecord | None:
    row = (await conn.execute(sa.select(table).where(table.c.id == session_id))).mappings().first()
    return _from_row(row) if row is not None else None


def _holds_a_run(changes: Mapping[str, Any]) -> bool:
    """A write that starts a run or queues a task: the writing node holds the session from now on."""
    return changes.get("status") is SessionStatus.RUNNING or changes.get("pending_task") is not None


def _concerned(observers: list[tuple[T, Concerns]], changed: Collection[str]) -> list[T]:
    return [observer for observer, concerns in observers if concerns is None or not set(concerns).isdisjoint(changed)]


class SessionRepo:
    """The only writer of the ``sessions`` table (its read cache relies on it: see ``read_cache.py``)."""

    def __init__(self, db: Database, clock: Clock = utc_now, ownership: NodeOwnership | None = None) -> None:
        self._db = db
        self._clock = clock
        self._ownership = ownership or NodeOwnership()
        self._listeners: list[Callable[[str], None]] = []
        self._hooks: list[tuple[ChangeHook, Concerns]] = []
        self._watchers: list[tuple[ChangeWatcher, Concerns]] = []
        self._views: ReadCache[str, SessionRecord] = ReadCache(VIEW_CACHE_SIZE)
        self._notices: ChangeNotices | None = None

    def follow(self, notices: ChangeNotices) -> None:
        """On PostgreSQL: hear the other nodes' writes, so views may be kept in memory (while the notices are heard)
        and event streams wake for changes made elsewhere (spec §26.4)."""
        self._notices = notices
        notices.on(NOTICE_KIND, self._written_elsewhere)
        notices.on_lost(self._views.clear)

    def _written_elsewhere(self, session_id: str) -> None:
        self._views.forget(session_id)
        self._changed(session_id)

    def _views_trusted(self) -> bool:
        return self._db.single_process or (self._notices is not None and self._notices.listening)

    def listen(self, listener: Callable[[str], None]) -> None:
        """Call ``listener(session_id)`` after every committed update or delete (wakes the event streams)."""
        self._listeners.append(listener)

    def on_change(self, hook: ChangeHook, *, fields: Concerns = None) -> None:
        """Run ``hook(conn, before, after)`` inside the transaction of every update that writes one of ``fields``
        (the webhook outbox, spec §22.4). An update no observer is concerned with never reads the row before."""
        self._hooks.append((hook, fields))

    def watch(self, watcher: ChangeWatcher, *, fields: Concerns = None) -> None:
        """Call ``watcher(before, after)`` after every committed update that wrote one of ``fields`` (the metrics,
        spec §19.3)."""
        self._watchers.append((watcher, fields))

    def _changed(self, session_id: str) -> None:
        for listener in self._listeners:
            listener(session_id)

    def now(self) -> Any:
        return self._clock()

    async def insert(self, record: SessionRecord, *, enqueue: bool = False) -> SessionRecord:
        """Insert ``record``; with ``enqueue`` it takes the next queue place, drawn in the same transaction."""
        record = record.evolve(**self._ownership.claim()) if record.owner_node is None else record
        values: dict[str, Any] = {name: _to_column(name, getattr(record, name)) for name in _COLUMNS}
        if enqueue:
            values["queue_seq"] = _next_queue_seq()
        with self._views.writing(record.id):
            async with self._db.transaction() as conn:
                if enqueue:
                    await self._db.serialise(conn, _QUEUE_LOCK_KEY)
                notices = notices_of(conn.kind, NOTICE_KIND, record.id)
                result = await conn.execute(table.insert().values(values).returning(table.c.queue_seq, *notices))
                if enqueue:
                    seq = result.scalar_one()
                    record = record.evolve(queue_seq=int(seq) if seq is not None else None)
        return record

    async def get(self, session_id: str) -> SessionRecord:
        row = await self._db.fetch_one(sa.select(table).where(table.c.id == session_id))
        if row is None:
            raise SessionNotFound()
        return _from_row(row)

    async def find(self, session_id: str) -> SessionRecord | None:
        row = await self._db.fetch_one(sa.select(table).where(table.c.id == session_id))
        return _from_row(row) if row is not None else None

    async def view(self, session_id: str) -> SessionRecord:
        """Like :meth:`get`, but the record may be shared with other readers: for display only, never mutated.

        Served from memory while no write happened since it was read (the API's polls cost no database hop). On
        PostgreSQL other nodes write too: views are kept only while their writes are heard (``follow``), so a view
        is at most as old as the notice of a write on another node takes to arrive."""
        record = await self.find_view(session_id)
        if record is None:
            raise SessionNotFound()
        return record

    async def find_view(self, session_id: str) -> SessionRecord | None:
        """Like :meth:`find`, shared as :meth:`view` is."""
        if not self._views_trusted():
            return await self.find(session_id)
        cached = self._views.get(session_id)
        if cached is not None:
            return cached
        ticket = self._views.ticket()
        record = await self.find(session_id)
        if record is not None:
            self._views.offer(session_id, record, ticket)
        return record

    async def update(self, session_id: SessionId, **changes: Any) -> SessionRecord:
        """Write ``changes`` (SessionRecord field names) and bump ``updated_at``; return the new record."""
        unknown = set(changes) - set(_COLUMNS)
        if unknown:
            raise ValueError(f"unknown session fields: {sorted(unknown)}")
        changes["updated_at"] = self._clock()
        if _holds_a_run(changes):
            changes.update(self._ownership.claim())
        redactor = REDACTORS.of(session_id)
        for name in _REDACTED_COLUMNS:
            if name in changes and redactor:
                changes[name] = redactor.value(changes[name])
        enqueue = any(value is NEXT_IN_QUEUE for value in changes.values())
        values = {
            name: _next_queue_seq() if value is NEXT_IN_QUEUE else _to_column(name, value)
            for name, value in changes.items()
        }
        hooks, watchers = _concerned(self._hooks, changes), _concerned(self._watchers, changes)
        with self._views.writing(session_id):
            async with self._db.transaction() as conn:
                if enqueue:
                    await self._db.serialise(conn, _QUEUE_LOCK_KEY)
                before = await _read_in(conn, session_id) if hooks or watchers else None
                notices = notices_of(conn.kind, NOTICE_KIND, session_id)
                fenced = where_all(table.c.id == session_id, self._ownership.fence())
                statement = table.update().where(*fenced).values(values).returning(*table.c, *notices)
                row = (await conn.execute(statement)).mappings().first()  # the row as this write left it
                if row is None:
                    raise await self._refusal(conn, session_id)
                after = _from_row(row)
                if before is not None:
                    for hook in hooks:
                        await hook(conn, before, after)
        if "sensitive_data" in changes and changes["sensitive_data"] is None:
            await self._db.scrub()  # the old row's bytes leave the WAL and the file's free space too
        self._changed(session_id)
        if before is not None:
            for watcher in watchers:
                watcher(before, after)
        return after

    async def add_usage(
        self, session_id: SessionId, *, input_tokens: int, output_tokens: int, llm_cost: Decimal
    ) -> SessionRecord:
        """Set the session's running totals (absolute values, so a retried write never double counts)."""
        return await self.update(
            session_id,
            total_input_tokens=input_tokens,
            total_output_tokens=output_tokens,
            llm_cost_usd=llm_cost,
        )

    async def delete(self, session_id: str) -> None:
        with self._views.writing(session_id):
            async with self._db.transaction() as conn:
                notices = notices_of(conn.kind, NOTICE_KIND, session_id)
                fenced = where_all(table.c.id == session_id, self._ownership.fence())
                deleted = table.delete().where(*fenced).returning(table.c.id, *notices)
                if (await conn.execute(deleted)).first() is None:
                    raise await self._refusal(conn, session_id)
        await self._db.scrub()  # the row may have held secrets (a keep-alive session keeps them until then)
        self._changed(session_id)

    async def page(self, page: int, page_size: int) -> tuple[list[SessionRecord], int]:
        total = int(await self._db.scalar(sa.select(sa.func.count()).select_from(table)) or 0)
        rows = await self._db.fetch_all(
            sa.select(table)
            .order_by(table.c.created_at.desc(), self._db.insertion_order(table).desc())
            .limit(page_size)
            .offset((page - 1) * page_size)
        )
        return [_from_row(row) for row in rows], total

    async def _refusal(self, conn: Tx, session_id: str) -> Exception:
        """Why an update or delete found no row: the row is gone, or this node was fenced out of the cluster."""
        if self._ownership.fence() is None:
            return SessionNotFound()
        exists = (await conn.execute(sa.select(table.c.id).where(table.c.id == session_id))).first()
        if exists is None:
            return SessionNotFound()
        return NodeFenced("This node was declared gone by the cluster, so it no longer writes; it must restart")

    async def with_status(self, *statuses: SessionStatus) -> list[SessionRecord]:
        """This node's sessions in ``statuses`` (on one process: all of them), oldest first."""
        in_status = table.c.status.in_([str(s) for s in statuses])
        rows = await self._db.fetch_all(
            sa.select(table)
            .where(*where_all(in_status, self._ownership.mine(table.c.owner_node)))
            .order_by(table.c.created_at)
        )
        return [_from_row(row) for row in rows]

    async def with_secrets(self) -> list[SessionRecord]:
        """Sessions whose row still holds ``sensitiveData``."""
        rows = await self._db.fetch_all(sa.select(table).where(table.c.sensitive_data.is_not(None)))
        return [_from_row(row) for row in rows]

    async def queued(self) -> list[SessionRecord]:
        """This node's sessions whose dispatched task never started, in submission order."""
        waiting = (table.c.status == str(SessionStatus.CREATED), table.c.pending_task.is_not(None))
        rows = await self._db.fetch_all(
            sa.select(table)
            .where(*where_all(*waiting, self._ownership.mine(table.c.owner_node)))
            .order_by(table.c.queue_seq)
        )
        return [_from_row(row) for row in rows]

    async def count_by_status(self) -> dict[str, int]:
        count = sa.func.count().label("count")
        rows = await self._db.fetch_all(sa.select(table.c.status, count).group_by(table.c.status))
        return {str(row["status"]): int(row["count"]) for row in rows}
