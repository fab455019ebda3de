"""ProfileRepo: the ``profiles`` table (profile jars themselves live as files under ``data/profiles/``)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from openbrowse.domain.clock import from_wire, to_wire
from openbrowse.domain.ids import ProfileId
from openbrowse.domain.profiles import ProfileRecord
from openbrowse.errors import ProfileNotFound

if TYPE_CHECKING:
    import aiosqlite

    from openbrowse.store.db import Database

_COLUMNS = ("id", "name", "user_id", "last_used_at", "created_at", "updated_at", "cookie_domains")
_TIME_COLUMNS = {"last_used_at", "created_at", "updated_at"}


def _to_column(name: str, value: Any) -> Any:
    if value is None:
        return None
    if name in _TIME_COLUMNS:
        return to_wire(value)
    if name == "cookie_domains":
        return json.dumps(list(value))
    return value


def _from_row(row: aiosqlite.Row) -> ProfileRecord:
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


def _like(query: str) -> str:
    escaped = query.lower().replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


class ProfileRepo:
    def __init__(self, db: Database) -> None:
        self._db = db

    async def exists(self, profile_id: str) -> bool:
        row = await self._db.fetch_one("SELECT 1 FROM profiles WHERE id = ?", (profile_id,))
        return row is not None

    async def insert(self, record: ProfileRecord) -> ProfileRecord:
        marks = ", ".join("?" for _ in _COLUMNS)
        values = tuple(_to_column(name, getattr(record, name)) for name in _COLUMNS)
        async with self._db.transaction() as conn:
            await conn.execute(f"INSERT INTO profiles ({', '.join(_COLUMNS)}) VALUES ({marks})", values)
        return record

    async def find(self, profile_id: str) -> ProfileRecord | None:
        row = await self._db.fetch_one("SELECT * FROM profiles WHERE id = ?", (profile_id,))
        return _from_row(row) if row is not None else None

    async def get(self, profile_id: str) -> ProfileRecord:
        record = await self.find(profile_id)
        if record is None:
            raise ProfileNotFound()
        return record

    async def page(self, page: int, page_size: int, query: str | None) -> tuple[list[ProfileRecord], int]:
        where = ""
        params: tuple[object, ...] = ()
        if query:
            where = (
                "WHERE lower(coalesce(name, '')) LIKE ? ESCAPE '\\' OR lower(coalesce(user_id, '')) LIKE ? ESCAPE '\\'"
            )
            params = (_like(query), _like(query))
        total_row = await self._db.fetch_one(f"SELECT COUNT(*) FROM profiles {where}", params)
        rows = await self._db.fetch_all(
            f"SELECT * FROM profiles {where} ORDER BY created_at DESC, rowid DESC LIMIT ? OFFSET ?",
            (*params, page_size, (page - 1) * page_size),
        )
        return [_from_row(row) for row in rows], int(total_row[0]) if total_row else 0

    async def update(self, profile_id: str, **changes: Any) -> ProfileRecord:
        if changes:
            unknown = set(changes) - set(_COLUMNS)
            if unknown:
                raise ValueError(f"unknown profile columns: {sorted(unknown)}")
            assignments = ", ".join(f"{name} = ?" for name in changes)
            values = tuple(_to_column(name, value) for name, value in changes.items())
            async with self._db.transaction() as conn:
                await conn.execute(f"UPDATE profiles SET {assignments} WHERE id = ?", (*values, profile_id))
        return await self.get(profile_id)

    async def delete(self, profile_id: str) -> bool:
        async with self._db.transaction() as conn:
            cursor = await conn.execute("DELETE FROM profiles WHERE id = ?", (profile_id,))
            return (cursor.rowcount or 0) > 0
