"""ProfileRepo: the ``profiles`` table, each row with its jar (spec §26.1: jars live in the database too).

A jar is read and written inside a write transaction that holds the profile's row: ``SELECT … FOR UPDATE`` on
PostgreSQL, ``BEGIN IMMEDIATE`` on SQLite (which holds the whole database). So the three-way merge of spec §9.3 is
safe across processes: two runs that share a profile merge one after the other, each reading what the other wrote.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa
from sqlalchemy.engine import RowMapping

from openbrowse.domain.clock import from_wire, to_wire
from openbrowse.domain.ids import ProfileId
from openbrowse.domain.profiles import ProfileRecord
from openbrowse.errors import ProfileNotFound
from openbrowse.store.schema import profiles as table

if TYPE_CHECKING:
    from openbrowse.store.db import Database, Tx

_COLUMNS = ("id", "name", "user_id", "last_used_at", "created_at", "updated_at", "cookie_domains")
_RECORD_COLUMNS = [table.c[name] for name in _COLUMNS]
_TIME_COLUMNS = {"last_used_at", "created_at", "updated_at"}


def _to_column(name: str, value: Any) -> Any:
    if value is None:
        return None
    if name in _TIME_COLUMNS:
        return to_wire(value)
    if name == "cookie_domains":
        return json.dumps(list(value))
    return value


def _from_row(row: RowMapping) -> ProfileRecord:
    domains = json.loads(row["cookie_domains"]) if row["cookie_domains"] else None
    return ProfileRecord(
        id=ProfileId(row["id"]),
        name=row["name"],
        user_id=row["user_id"],
        created_at=from_wire(row["created_at"]),
        updated_at=from_wire(row["updated_at"]),
        last_used_at=from_wire(row["last_used_at"]) if row["last_used_at"] else None,
        cookie_domains=tuple(str(d) for d in domains) if isinstance(domains, list) else None,
    )


def _jar_text(jar: Any) -> str:
    return json.dumps(jar, ensure_ascii=False, separators=(",", ":"))


def _jar_of(text: str | None) -> Any:
    """The stored jar, parsed; None when there is none or it cannot be parsed."""
    if text is None:
        return None
    try:
        return json.loads(text)
    except ValueError:
        return None


def _like(query: str) -> str:
    escaped = query.lower().replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


def _changes(changes: dict[str, Any]) -> dict[str, Any]:
    unknown = set(changes) - set(_COLUMNS)
    if unknown:
        raise ValueError(f"unknown profile columns: {sorted(unknown)}")
    return {name: _to_column(name, value) for name, value in changes.items()}


class LockedProfile:
    """A profile's row held for the rest of a transaction: its record, its jar, and a way to write both."""

    def __init__(self, conn: Tx, record: ProfileRecord, jar: Any) -> None:
        self._conn = conn
        self.record = record
        self.jar = jar
        """The parsed jar as stored, or None when there is none."""

    async def write(self, jar: Any, *, keep_backup: bool = False, **changes: Any) -> ProfileRecord:
        """Store ``jar`` (with ``keep_backup``, the jar it replaces becomes the import backup) and ``changes``."""
        values = _changes(changes)
        values["jar"] = _jar_text(jar)
        if keep_backup:
            values["jar_backup"] = table.c.jar
        row = (
            (
                await self._conn.execute(
                    table.update().where(table.c.id == self.record.id).values(values).returning(*_RECORD_COLUMNS)
                )
            )
            .mappings()
            .one()
        )
        self.record, self.jar = _from_row(row), jar
        return self.record

    async def adopt(self, jar: Any, backup: Any) -> None:
        """Take in a jar (and its import backup) from the files of an install from before jars moved in."""
        values = {"jar": _jar_text(jar), "jar_backup": _jar_text(backup) if backup is not None else None}
        await self._conn.execute(table.update().where(table.c.id == self.record.id).values(values))
        self.jar = jar


class ProfileRepo:
    def __init__(self, db: Database) -> None:
        self._db = db

    async def exists(self, profile_id: str) -> bool:
        return await self._db.fetch_one(sa.select(table.c.id).where(table.c.id == profile_id)) is not None

    async def insert(self, record: ProfileRecord, jar: Any = None) -> ProfileRecord:
        values = {name: _to_column(name, getattr(record, name)) for name in _COLUMNS}
        values["jar"] = _jar_text(jar) if jar is not None else None
        async with self._db.transaction() as conn:
            await conn.execute(table.insert().values(values))
        return record

    async def find(self, profile_id: str) -> ProfileRecord | None:
        row = await self._db.fetch_one(sa.select(*_RECORD_COLUMNS).where(table.c.id == profile_id))
        return _from_row(row) if row is not None else None

    async def get(self, profile_id: str) -> ProfileRecord:
        record = await self.find(profile_id)
        if record is None:
            raise ProfileNotFound()
        return record

    async def read_jar(self, profile_id: str) -> Any:
        """The stored jar, parsed (None when there is none); ProfileNotFound when the profile does not exist."""
        row = await self._db.fetch_one(sa.select(table.c.jar).where(table.c.id == profile_id))
        if row is None:
            raise ProfileNotFound()
        return _jar_of(row["jar"])

    @asynccontextmanager
    async def locked(self, profile_id: str) -> AsyncIterator[LockedProfile]:
        """Hold the profile's row until the block ends (committed then); ProfileNotFound when it does not exist."""
        async with self._db.transaction() as conn:
            query = sa.select(*_RECORD_COLUMNS, table.c.jar).where(table.c.id == profile_id).with_for_update()
            row = (await conn.execute(query)).mappings().first()
            if row is None:
                raise ProfileNotFound()
            yield LockedProfile(conn, _from_row(row), _jar_of(row["jar"]))

    async def without_jar(self) -> list[str]:
        """Profiles whose jar is not in the database yet (made before jars moved out of files)."""
        rows = await self._db.fetch_all(sa.select(table.c.id).where(table.c.jar.is_(None)))
        return [str(row["id"]) for row in rows]

    async def page(self, page: int, page_size: int, query: str | None) -> tuple[list[ProfileRecord], int]:
        where: list[Any] = []
        if query:
            pattern = _like(query)
            where.append(
                sa.or_(
                    sa.func.lower(sa.func.coalesce(table.c.name, "")).like(pattern, escape="\\"),
                    sa.func.lower(sa.func.coalesce(table.c.user_id, "")).like(pattern, escape="\\"),
                )
            )
        total = await self._db.scalar(sa.select(sa.func.count()).select_from(table).where(*where))
        rows = await self._db.fetch_all(
            sa.select(*_RECORD_COLUMNS)
            .where(*where)
            .order_by(table.c.created_at.desc(), self._db.insertion_order(table).desc())
            .limit(page_size)
            .offset((page - 1) * page_size)
        )
        return [_from_row(row) for row in rows], int(total or 0)

    async def update(self, profile_id: str, **changes: Any) -> ProfileRecord:
        if changes:
            values = _changes(changes)
            async with self._db.transaction() as conn:
                await conn.execute(table.update().where(table.c.id == profile_id).values(values))
        return await self.get(profile_id)

    async def delete(self, profile_id: str) -> bool:
        async with self._db.transaction() as conn:
            result = await conn.execute(table.delete().where(table.c.id == profile_id))
            return (result.rowcount or 0) > 0
