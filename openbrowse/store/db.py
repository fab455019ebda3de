"""The SQLite database: one aiosqlite connection, WAL, foreign keys, ordered additive migrations."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from importlib import resources
from pathlib import Path
from types import TracebackType

import aiosqlite

logger = logging.getLogger(__name__)


def _migration_scripts() -> list[tuple[int, str]]:
    folder = resources.files("openbrowse.store") / "migrations"
    scripts: list[tuple[int, str]] = []
    for entry in folder.iterdir():
        name = entry.name
        if name.endswith(".sql") and name[:4].isdigit():
            scripts.append((int(name[:4]), entry.read_text(encoding="utf-8")))
    return sorted(scripts)


class Database:
    """Owns the connection. Writes go through :meth:`transaction`, which serialises them under one lock."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._conn: aiosqlite.Connection | None = None
        self._write_lock = asyncio.Lock()

    async def __aenter__(self) -> Database:
        await self.open()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    async def open(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        conn = await aiosqlite.connect(self.path, isolation_level=None)
        conn.row_factory = aiosqlite.Row
        await conn.execute("PRAGMA journal_mode=WAL")
        await conn.execute("PRAGMA foreign_keys=ON")
        await conn.execute("PRAGMA busy_timeout=5000")
        await conn.execute("PRAGMA synchronous=NORMAL")
        self._conn = conn
        await self._migrate()

    async def aclose(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            await asyncio.shield(conn.close())

    @property
    def conn(self) -> aiosqlite.Connection:
        if self._conn is None:
            raise RuntimeError("database is not open")
        return self._conn

    async def _migrate(self) -> None:
        async with self.conn.execute("PRAGMA user_version") as cursor:
            row = await cursor.fetchone()
        current = int(row[0]) if row else 0
        for version, script in _migration_scripts():
            if version <= current:
                continue
            logger.info("Applying database migration %04d", version)
            await self.conn.executescript(f"BEGIN;\n{script}\nPRAGMA user_version={version};\nCOMMIT;")

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[aiosqlite.Connection]:
        """A write transaction. Commits on success, rolls back on any exception (cancellation included)."""
        async with self._write_lock:
            await self.conn.execute("BEGIN IMMEDIATE")
            try:
                yield self.conn
            except BaseException:
                await asyncio.shield(self.conn.execute("ROLLBACK"))
                raise
            await asyncio.shield(self.conn.execute("COMMIT"))

    # One hop to the connection's thread per read (execute + fetch + close would be three): reads are the
    # API's hot path (``GET /v3/sessions/{id}``).
    async def fetch_all(self, sql: str, params: tuple[object, ...] = ()) -> list[aiosqlite.Row]:
        return list(await self.conn.execute_fetchall(sql, params))

    async def fetch_one(self, sql: str, params: tuple[object, ...] = ()) -> aiosqlite.Row | None:
        rows = list(await self.conn.execute_fetchall(sql, params))
        return rows[0] if rows else None
