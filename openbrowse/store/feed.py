"""FeedRepo: the ``messages`` table. Ordered by a monotonically increasing sequence, never by timestamp."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING

import sqlalchemy as sa
from sqlalchemy.engine import RowMapping

from openbrowse.domain.clock import Clock, from_wire, to_wire, utc_now
from openbrowse.domain.feed import FeedEntry, Message
from openbrowse.domain.ids import MessageId, SessionId, new_message_id
from openbrowse.domain.redaction import REDACTORS
from openbrowse.errors import InvalidRequest, NodeFenced
from openbrowse.store.change_notices import ChangeNotices, notices_of
from openbrowse.store.ownership import NodeOwnership
from openbrowse.store.schema import messages as table

NOTICE_KIND = "feed"

if TYPE_CHECKING:
    from openbrowse.store.db import Database


def _message(row: RowMapping) -> Message:
    return Message(
        id=MessageId(row["id"]),
        session_id=SessionId(row["session_id"]),
        seq=int(row["seq"]),
        role=row["role"],
        type=row["type"],
        summary=row["summary"],
        data=row["data"],
        hidden=bool(row["hidden"]),
        created_at=from_wire(row["created_at"]),
    )


class FeedRepo:
    """Implements :class:`openbrowse.domain.feed.FeedSink`."""

    def __init__(self, db: Database, clock: Clock = utc_now, ownership: NodeOwnership | None = None) -> None:
        self._db = db
        self._clock = clock
        self._ownership = ownership or NodeOwnership()
        self._listeners: list[Callable[[str], None]] = []

    def listen(self, listener: Callable[[str], None]) -> None:
        """Call ``listener(session_id)`` after every committed append (wakes the event streams)."""
        self._listeners.append(listener)

    def follow(self, notices: ChangeNotices) -> None:
        """On PostgreSQL: the listeners hear appends made on other nodes too (spec §26.4)."""
        notices.on(NOTICE_KIND, self._appended)

    def _appended(self, session_id: str) -> None:
        for listener in self._listeners:
            listener(session_id)

    async def append(self, session_id: SessionId, entry: FeedEntry) -> Message:
        redactor = REDACTORS.of(session_id)
        if redactor:  # spec §25.3: a session's secrets never reach its feed (and so neither its SSE stream)
            entry = replace(entry, summary=redactor.text(entry.summary), data=redactor.value(entry.data))
        message_id = new_message_id()
        created = self._clock()
        row = {
            "id": message_id,
            "session_id": session_id,
            "role": entry.role,
            "type": entry.type.value,
            "summary": entry.summary,
            "data": entry.data_text(),
            "hidden": int(entry.hidden),
            "created_at": to_wire(created),
        }
        async with self._db.transaction() as conn:
            notices = notices_of(conn.kind, NOTICE_KIND, session_id)
            fence = self._ownership.fence()
            if fence is None:
                insert = table.insert().values(row)
            else:  # the row goes in only while this node is still the one it registered as (spec §26.5)
                values = sa.select(*(sa.literal(value, table.c[name].type) for name, value in row.items())).where(fence)
                insert = table.insert().from_select(list(row), values)
            inserted = (await conn.execute(insert.returning(table.c.seq, *notices))).first()
            if inserted is None:
                raise NodeFenced("This node was declared gone by the cluster, so it no longer writes; it must restart")
            seq = int(inserted[0])
        self._appended(session_id)
        return Message(
            id=message_id,
            session_id=session_id,
            seq=seq,
            role=entry.role,
            type=entry.type.value,
            summary=entry.summary,
            data=entry.data_text(),
            hidden=entry.hidden,
            created_at=created,
        )

    async def _cursor_seq(self, session_id: str, message_id: str) -> int:
        seq = await self.seq_of(session_id, message_id)
        if seq is None:
            raise InvalidRequest("Unknown message cursor")
        return seq

    async def page(
        self, session_id: str, *, after: str | None = None, before: str | None = None, limit: int = 100
    ) -> tuple[list[Message], bool]:
        """One page in chronological order, and whether more exist beyond it in the paging direction."""
        after_seq = await self._cursor_seq(session_id, after) if after else None
        before_seq = await self._cursor_seq(session_id, before) if before else None
        query = sa.select(table).where(table.c.session_id == session_id)
        if after_seq is not None:
            query = query.where(table.c.seq > after_seq)
        if before_seq is not None:
            query = query.where(table.c.seq < before_seq)
        backwards = before_seq is not None and after_seq is None
        rows = await self._db.fetch_all(
            query.order_by(table.c.seq.desc() if backwards else table.c.seq.asc()).limit(limit + 1)
        )
        has_more = len(rows) > limit
        messages = [_message(row) for row in rows[:limit]]
        if backwards:
            messages.reverse()
        return messages, has_more

    async def seq_of(self, session_id: str, message_id: str) -> int | None:
        """The sequence number of a message of this session, or None if it is not one of its messages."""
        seq = await self._db.scalar(
            sa.select(table.c.seq).where(table.c.id == message_id, table.c.session_id == session_id)
        )
        return int(seq) if seq is not None else None

    async def since(self, session_id: str, seq: int, limit: int) -> list[Message]:
        """The next ``limit`` messages after sequence number ``seq``, in order."""
        rows = await self._db.fetch_all(
            sa.select(table)
            .where(table.c.session_id == session_id, table.c.seq > seq)
            .order_by(table.c.seq)
            .limit(limit)
        )
        return [_message(row) for row in rows]

    async def all(self, session_id: str) -> list[Message]:
        rows = await self._db.fetch_all(sa.select(table).where(table.c.session_id == session_id).order_by(table.c.seq))
        return [_message(row) for row in rows]

    async def of_types(self, session_id: str, *types: str) -> list[Message]:
        rows = await self._db.fetch_all(
            sa.select(table).where(table.c.session_id == session_id, table.c.type.in_(types)).order_by(table.c.seq)
        )
        return [_message(row) for row in rows]

    def now(self) -> object:
        return self._clock()
