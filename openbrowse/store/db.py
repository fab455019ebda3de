"""The SQLite database: a writer and a read-only connection, WAL, foreign keys, ordered additive migrations.

Writes are serialised on the writer under one lock. Reads go to a second, read-only connection: under WAL it sees
only committed data, so no coroutine reads another one's half-done transaction, and reads never queue behind a
write (serialising reads on the writer's lock would also do, but would deadlock a read made inside a transaction
and make every poll wait for the slowest write).
"""

from __future__ import annotations

import asyncio
import logging
import os
import sqlite3
from collections.abc import AsyncIterator, Awaitable
from contextlib import asynccontextmanager
from importlib import resources
from pathlib import Path
from types import TracebackType
from typing import TypeVar

import aiosqlite

from openbrowse.shielding import run_shielded

logger = logging.getLogger(__name__)

T = TypeVar("T")
PRIVATE_DIR_MODE = 0o700
PRIVATE_FILE_MODE = 0o600


def create_private(path: Path) -> None:
    """The database's folder (0700) and an empty file (0600) before SQLite opens it: SQLite gives its -wal and
    -shm files the database file's mode. Existing files keep their modes (the startup check warns about loose
    ones, spec §25.4)."""
    if not path.parent.exists():
        path.parent.mkdir(mode=PRIVATE_DIR_MODE, parents=True, exist_ok=True)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, PRIVATE_FILE_MODE)
    except FileExistsError:
        return
    os.fchmod(fd, PRIVATE_FILE_MODE)  # whatever the umask
    os.close(fd)


def _migration_scripts() -> list[tuple[int, str]]:
    folder = resources.files("openbrowse.store") / "migrations"
    scripts: list[tuple[int, str]] = []
    for entry in folder.iterdir():
        name = entry.name
        if name.endswith(".sql") and name[:4].isdigit():
            scripts.append((int(name[:4]), entry.read_text(encoding="utf-8")))
    return sorted(scripts)


class Database:
    """Owns both connections. Writes go through :meth:`transaction`, which serialises them under one lock."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._conn: aiosqlite.Connection | None = None
        self._reader: aiosqlite.Connection | None = None
        self._write_lock = asyncio.Lock()

    async def __aenter__(self) -> Database:
        await self.open()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    async def open(self) -> None:
        await asyncio.to_thread(create_private, self.path)
        conn = await aiosqlite.connect(self.path, isolation_level=None)
        conn.row_factory = aiosqlite.Row
        await conn.execute("PRAGMA journal_mode=WAL")
        await conn.execute("PRAGMA foreign_keys=ON")
        await conn.execute("PRAGMA busy_timeout=5000")
        await conn.execute("PRAGMA synchronous=NORMAL")
        await conn.execute("PRAGMA secure_delete=ON")  # deleted and overwritten rows (secrets) are zeroed
        self._conn = conn
        await self._migrate()
        reader = await aiosqlite.connect(f"{self.path.resolve().as_uri()}?mode=ro", uri=True, isolation_level=None)
        reader.row_factory = aiosqlite.Row
        await reader.execute("PRAGMA busy_timeout=5000")
        self._reader = reader

    async def aclose(self) -> None:
        reader, self._reader = self._reader, None
        conn, self._conn = self._conn, None
        for connection in (reader, conn):  # the writer last: it checkpoints the WAL on close
            if connection is not None:
                await run_shielded(connection.close())

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

    async def scrub(self) -> None:
        """Move every committed page into the file and empty the WAL, so overwritten rows (with
        ``secure_delete``, zeroed in the file) survive nowhere. Best effort: a busy reader only delays it."""
        async with self._write_lock:
            try:
                await _to_completion(self._execute("PRAGMA wal_checkpoint(TRUNCATE)"))
            except sqlite3.Error:
                logger.warning("Could not checkpoint the database after wiping secrets", exc_info=True)

    @property
    def reader(self) -> aiosqlite.Connection:
        if self._reader is None:
            raise RuntimeError("database is not open")
        return self._reader

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[aiosqlite.Connection]:
        """A write transaction. Commits on success, rolls back on any exception (cancellation included).

        BEGIN is inside the guarded region, and BEGIN, COMMIT and ROLLBACK each run to their end even when the
        caller is cancelled meanwhile (the cancellation is re-raised afterwards), so the lock is only released
        once the connection is out of its transaction. Reads inside the block must use the yielded connection
        to see the block's own writes.
        """
        async with self._write_lock:
            try:
                await _to_completion(self._execute("BEGIN IMMEDIATE"))
                yield self.conn
                await _to_completion(self._execute("COMMIT"))
            except BaseException:
                await _to_completion(self._rollback())
                raise

    async def _execute(self, sql: str) -> None:
        await self.conn.execute(sql)

    async def _rollback(self) -> None:
        try:
            await self.conn.execute("ROLLBACK")
        except sqlite3.OperationalError as exc:
            if "no transaction is active" not in str(exc):
                raise

    # One hop to the connection's thread per read (execute + fetch + close would be three): reads are the
    # API's hot path (``GET /v3/sessions/{id}``).
    async def fetch_all(self, sql: str, params: tuple[object, ...] = ()) -> list[aiosqlite.Row]:
        # one call into the connection's thread that executes, fetches and closes the cursor: a reader cancelled
        # half-way can never leave a statement open, which would pin the read connection to an old snapshot
        rows = await self.reader.execute_fetchall(sql, params)
        return list(rows)

    async def fetch_one(self, sql: str, params: tuple[object, ...] = ()) -> aiosqlite.Row | None:
        rows = await self.fetch_all(sql, params)
        return rows[0] if rows else None


async def _to_completion(work: Awaitable[T]) -> T:
    """Await ``work`` to its end even if the caller is cancelled meanwhile; then re-raise that cancellation."""
    inner = asyncio.ensure_future(work)
    cancelled = False
    while not inner.done():
        try:
            await asyncio.wait({inner})
        except asyncio.CancelledError:
            cancelled = True
    if cancelled:
        if not inner.cancelled():
            inner.exception()  # retrieved: the cancellation wins, the rollback path cleans up
        raise asyncio.CancelledError
    return inner.result()
