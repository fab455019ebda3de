"""The database behind every repo: SQLite (the default) or PostgreSQL, through SQLAlchemy Core's asyncio layer.

SQLite: one writer connection, writes serialised under one lock and ``BEGIN IMMEDIATE`` (which also serialises
writers in other processes), and a second, read-only connection: under WAL it sees only committed data, so no
coroutine reads another one's half-done transaction, and reads never queue behind a write.

PostgreSQL: one bounded pool (``DATABASE_POOL_SIZE`` connections, no overflow). Reads run in autocommit (one round
trip each); writes are ordinary transactions, and what must be serialised across processes takes a row lock
(``SELECT … FOR UPDATE``) or a transaction-scoped advisory lock (:meth:`Database.serialise`).

A connection lost mid-run is retried with backoff (reads, and the start of a write); when the database stays away,
the caller gets :class:`~openbrowse.errors.StoreUnavailable`, one sentence, HTTP 503.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager, nullcontext
from pathlib import Path
from types import TracebackType
from typing import Any, TypeVar

import asyncpg
import sqlalchemy as sa
from sqlalchemy import event, exc as sa_exc, text
from sqlalchemy.engine import CursorResult, RowMapping
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, create_async_engine
from sqlalchemy.sql.base import Executable

from openbrowse.errors import StoreUnavailable
from openbrowse.store.migrate import migrate_postgresql, migrate_sqlite
from openbrowse.store.target import StoreKind, StoreTarget

logger = logging.getLogger(__name__)

T = TypeVar("T")
PRIVATE_DIR_MODE = 0o700
PRIVATE_FILE_MODE = 0o600
DEFAULT_POOL_SIZE = 10
"""PostgreSQL connections one process holds at most (``DATABASE_POOL_SIZE``)."""
POOL_TIMEOUT_S = 30.0
CONNECT_TIMEOUT_S = 10.0
RETRY_DELAYS_S = (0.2, 0.5, 1.0, 2.0, 4.0)
"""Backoff before each retry of a read, or of a write's start, whose connection was lost (about 8 s in all)."""
_SQLITE_PRAGMAS = (
    "PRAGMA journal_mode=WAL",
    "PRAGMA foreign_keys=ON",
    "PRAGMA busy_timeout=5000",
    "PRAGMA synchronous=NORMAL",
    "PRAGMA secure_delete=ON",  # deleted and overwritten rows (secrets) are zeroed
)
Statement = Executable | str
Params = Mapping[str, Any] | list[dict[str, Any]] | None


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


def _statement(statement: Statement) -> Executable:
    return text(statement) if isinstance(statement, str) else statement


def is_connection_loss(exc: BaseException) -> bool:
    """Whether ``exc`` says the database went away (worth a retry), not that the statement was wrong."""
    if isinstance(exc, OSError):
        return True
    if isinstance(exc, sa_exc.DBAPIError):
        return bool(exc.connection_invalidated) or isinstance(exc, sa_exc.InterfaceError)
    return False


def _sqlite_writer(path: Path) -> AsyncEngine:
    engine = create_async_engine(f"sqlite+aiosqlite:///{path}", pool_size=1, max_overflow=0)

    @event.listens_for(engine.sync_engine, "connect")
    def _configure(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.isolation_level = None  # SQLAlchemy's BEGIN below, never the driver's implicit one
        cursor = dbapi_connection.cursor()
        for pragma in _SQLITE_PRAGMAS:
            cursor.execute(pragma)
        cursor.close()

    @event.listens_for(engine.sync_engine, "begin")
    def _begin(conn: Any) -> None:
        conn.exec_driver_sql("BEGIN IMMEDIATE")  # the write lock now, not at the first write (no upgrade deadlock)

    return engine


def _sqlite_reader(path: Path) -> AsyncEngine:
    engine = create_async_engine(f"sqlite+aiosqlite:///file:{path}?mode=ro&uri=true", pool_size=1, max_overflow=0)

    @event.listens_for(engine.sync_engine, "connect")
    def _configure(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.isolation_level = None  # a read never holds a snapshot open after it
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA busy_timeout=5000")
        cursor.close()

    return engine


class Tx:
    """A write transaction's connection. Each statement runs to its end even if the caller is cancelled meanwhile
    (the cancellation is re-raised after it, and the transaction rolls back): SQLAlchemy would otherwise invalidate
    a connection cancelled mid-statement, and an invalidated SQLite connection keeps its write lock."""

    def __init__(self, conn: AsyncConnection, kind: StoreKind) -> None:
        self._conn = conn
        self.kind = kind

    async def execute(self, statement: Statement, params: Params = None) -> CursorResult[Any]:
        return await _to_completion(self._conn.execute(_statement(statement), params))


class Database:
    """Owns the engines. Writes go through :meth:`transaction`, reads through :meth:`fetch_all` and friends."""

    def __init__(self, target: StoreTarget | Path, *, pool_size: int = DEFAULT_POOL_SIZE) -> None:
        self.target = target if isinstance(target, StoreTarget) else StoreTarget.sqlite(target)
        self._pool_size = pool_size
        self._writer: AsyncEngine | None = None
        self._reader: AsyncEngine | None = None
        self._write_lock = asyncio.Lock() if self.kind == "sqlite" else None

    @property
    def kind(self) -> StoreKind:
        return self.target.kind

    @property
    def single_process(self) -> bool:
        """SQLite: this process is the only writer (the instance lock says so), so it may cache what it wrote."""
        return self.kind == "sqlite"

    async def __aenter__(self) -> Database:
        await self.open()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    async def open(self) -> None:
        """Connect and migrate; StoreUnavailable (one sentence) when the database cannot be reached."""
        try:
            if self.target.sqlite_path is not None:
                await self._open_sqlite(self.target.sqlite_path)
            else:
                await self._open_postgresql()
        except BaseException as exc:
            await self.aclose()
            if isinstance(exc, sa_exc.DBAPIError | OSError | asyncpg.PostgresError | asyncpg.InterfaceError):
                raise StoreUnavailable(
                    f"The database ({self.target.describe()}) cannot be reached: {_reason(exc)}"
                ) from None
            raise

    async def _open_sqlite(self, path: Path) -> None:
        await asyncio.to_thread(create_private, path)
        self._writer = _sqlite_writer(path)
        async with self._writer.connect() as conn:
            await migrate_sqlite(conn)
        self._reader = _sqlite_reader(path)

    async def _open_postgresql(self) -> None:
        self._writer = create_async_engine(
            self.target.url,
            pool_size=self._pool_size,
            max_overflow=0,
            pool_timeout=POOL_TIMEOUT_S,
            connect_args={"timeout": CONNECT_TIMEOUT_S},
        )
        self._reader = self._writer.execution_options(isolation_level="AUTOCOMMIT")  # same pool
        async with self._writer.begin() as conn:
            await migrate_postgresql(conn)

    async def aclose(self) -> None:
        reader, self._reader = self._reader, None
        writer, self._writer = self._writer, None
        if reader is not None and reader is not writer and self.kind == "sqlite":
            await _to_completion(reader.dispose())
        if writer is not None:  # the writer last: SQLite checkpoints the WAL when it closes
            await _to_completion(writer.dispose())

    @property
    def engine(self) -> AsyncEngine:
        """The engine writes go through (for event listeners: tracing, tests)."""
        return self._engine(reader=False)

    def _engine(self, reader: bool) -> AsyncEngine:
        engine = self._reader if reader else self._writer
        if engine is None:
            raise RuntimeError("database is not open")
        return engine

    async def ping(self) -> bool:
        """Whether the database answers a trivial query now (``/health``)."""
        try:
            await _to_completion(self._read(text("SELECT 1"), None))
        except Exception:
            return False
        return True

    async def scrub(self) -> None:
        """SQLite: move every committed page into the file and empty the WAL, so overwritten rows (with
        ``secure_delete``, zeroed in the file) survive nowhere. Best effort: a busy reader only delays it.
        PostgreSQL keeps dead rows until VACUUM; nothing to do here."""
        if self._write_lock is None:
            return
        async with self._write_lock:
            try:
                await _to_completion(self._checkpoint())
            except sa_exc.DBAPIError:
                logger.warning("Could not checkpoint the database after wiping secrets", exc_info=True)

    async def _checkpoint(self) -> None:
        async with self._engine(reader=False).connect() as conn:
            raw = (await conn.get_raw_connection()).driver_connection
            assert raw is not None
            await raw.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[Tx]:
        """A write transaction. Commits on success, rolls back on any exception (cancellation included).

        Its start runs inside the guarded region, and start, COMMIT and ROLLBACK each run to their end even when
        the caller is cancelled meanwhile (the cancellation is re-raised afterwards), so the lock is only released
        once the connection is out of its transaction. Reads inside the block must use the yielded connection
        to see the block's own writes.
        """
        async with self._write_lock or nullcontext():
            conn = await _opened(self._retrying(self._begin))
            try:
                try:
                    yield Tx(conn, self.kind)
                    await _to_completion(conn.commit())
                except BaseException:
                    await _to_completion(conn.rollback())
                    raise
                finally:
                    await _to_completion(conn.close())
            except sa_exc.DBAPIError as exc:
                if is_connection_loss(exc):
                    raise StoreUnavailable(f"The database connection was lost: {_reason(exc)}") from None
                raise

    async def _begin(self) -> AsyncConnection:
        conn = await self._engine(reader=False).connect()
        try:
            await conn.begin()  # SQLite: BEGIN IMMEDIATE, from the engine's "begin" event
        except BaseException:
            await _to_completion(conn.close())
            raise
        return conn

    async def serialise(self, conn: Tx, key: int) -> None:
        """Inside a transaction: wait until no other transaction, in any process, holds ``key``. SQLite's write
        transactions are serialised already."""
        if self.kind == "postgresql":
            await conn.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": key})

    def insertion_order(self, table: sa.Table) -> Any:
        """A column that orders rows of equal timestamps: SQLite's ``rowid`` (insertion order), else the id."""
        return sa.literal_column("rowid") if self.kind == "sqlite" else table.c.id

    async def fetch_all(self, statement: Statement, params: Params = None) -> list[RowMapping]:
        # each read runs to its end even if its caller is cancelled: a read abandoned half-way can never leave a
        # statement open, which would pin the read connection to an old snapshot
        return await _to_completion(self._retrying(lambda: self._read(_statement(statement), params)))

    async def fetch_one(self, statement: Statement, params: Params = None) -> RowMapping | None:
        rows = await self.fetch_all(statement, params)
        return rows[0] if rows else None

    async def scalar(self, statement: Statement, params: Params = None) -> Any:
        row = await self.fetch_one(statement, params)
        return next(iter(row.values())) if row is not None else None

    async def _read(self, statement: Executable, params: Params) -> list[RowMapping]:
        async with self._engine(reader=True).connect() as conn:
            result = await conn.execute(statement, params)
            return list(result.mappings().all())

    async def _retrying(self, attempt: Callable[[], Awaitable[T]]) -> T:
        for delay in (*RETRY_DELAYS_S, None):
            try:
                return await attempt()
            except (sa_exc.DBAPIError, OSError) as exc:
                if not is_connection_loss(exc) or self.kind == "sqlite":
                    raise
                if delay is None:
                    raise StoreUnavailable(f"The database cannot be reached: {_reason(exc)}") from None
                logger.warning("Database connection lost (%s); retrying in %.1f s", _reason(exc), delay)
                await asyncio.sleep(delay)
        raise AssertionError("unreachable")


def _reason(exc: BaseException) -> str:
    cause = exc.orig if isinstance(exc, sa_exc.DBAPIError) and exc.orig is not None else exc
    first_line = str(cause).strip().splitlines()[0] if str(cause).strip() else type(cause).__name__
    return first_line.rstrip(".") + "."


async def _opened(work: Awaitable[AsyncConnection]) -> AsyncConnection:
    """Like :func:`_to_completion`, but a connection opened for a caller cancelled meanwhile is closed."""
    inner = asyncio.ensure_future(work)
    try:
        return await _to_completion(inner)
    except asyncio.CancelledError:
        if inner.done() and not inner.cancelled() and inner.exception() is None:
            conn = inner.result()
            await _to_completion(_rollback_and_close(conn))
        raise


async def _rollback_and_close(conn: AsyncConnection) -> None:
    await conn.rollback()
    await conn.close()


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
