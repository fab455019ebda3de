"""ChangeNotices: what other nodes wrote, told by PostgreSQL's ``LISTEN``/``NOTIFY`` (spec §26.4).

On SQLite this process is the only writer and knows every change it makes. On PostgreSQL other nodes write the
same rows, so a repo that keeps read results in memory, or wakes event streams on a write, must hear of theirs
too. Each write transaction sends ``pg_notify(CHANNEL, '<kind>:<id>')`` (see :func:`notify`), which PostgreSQL
delivers to every listener once the transaction commits; this class holds one connection outside the pool that
listens, and calls the handlers registered for the kind.

While the listening connection is down nothing may be trusted to be current: :attr:`listening` is false, the
``on_lost`` handlers run (caches drop everything and stop keeping results), and the connection is re-opened with
backoff; once it is back, the ``on_lost`` handlers run again (what was written while deaf is unknown) before
:attr:`listening` turns true.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
from collections import defaultdict
from collections.abc import Callable
from types import TracebackType
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection, create_async_engine
from sqlalchemy.pool import NullPool

from openbrowse.errors import StoreUnavailable
from openbrowse.shielding import run_shielded
from openbrowse.store.target import StoreKind, StoreTarget

logger = logging.getLogger(__name__)

CHANNEL = "openbrowse_changes"
APPLICATION_NAME = "openbrowse-notices"
"""How the listening connection shows in ``pg_stat_activity``."""
RECONNECT_DELAYS_S = (0.2, 0.5, 1.0, 2.0, 5.0)
CONNECT_TIMEOUT_S = 10.0
PROBE_EVERY_S = 5.0
"""How often the listening connection is asked a trivial question: a connection cut without a word (a partition)
would otherwise stay "listening" and hear nothing."""

Handler = Callable[[str], None]


def notice(kind: str, key: str) -> Any:
    """A column for a PostgreSQL write's ``RETURNING``: the listeners of every node hear of the change once it
    commits (NOTIFY is transactional), at no extra round trip. Its value is always NULL."""
    return sa.func.pg_notify(CHANNEL, f"{kind}:{key}").label("notified")


def notices_of(kind: StoreKind, notice_kind: str, key: str) -> list[Any]:
    """:func:`notice` on PostgreSQL, nothing on SQLite (this process is its only writer)."""
    return [notice(notice_kind, key)] if kind == "postgresql" else []


class ChangeNotices:
    def __init__(self, target: StoreTarget) -> None:
        if target.kind != "postgresql":
            raise ValueError("change notices need PostgreSQL")
        self._engine = create_async_engine(
            target.url,
            poolclass=NullPool,
            connect_args={"timeout": CONNECT_TIMEOUT_S, "server_settings": {"application_name": APPLICATION_NAME}},
        )
        self._describe = target.describe()
        self._handlers: defaultdict[str, list[Handler]] = defaultdict(list)
        self._lost_handlers: list[Callable[[], None]] = []
        self._conn: AsyncConnection | None = None
        self._raw: Any = None
        """The asyncpg connection under ``_conn``: used directly, so no transaction ever holds the notices back
        (PostgreSQL delivers them between transactions only)."""
        self._dropped = asyncio.Event()
        self._keeper: asyncio.Task[None] | None = None
        self.listening = False
        self.connections = 0
        """How many times listening started (a reconnect counts)."""

    def on(self, kind: str, handler: Handler) -> None:
        """Call ``handler(key)`` for each committed change of ``kind`` (from any node, this one included)."""
        self._handlers[kind].append(handler)

    def on_lost(self, handler: Callable[[], None]) -> None:
        """Call ``handler()`` when changes may have been missed (the listening connection dropped or came back)."""
        self._lost_handlers.append(handler)

    async def __aenter__(self) -> ChangeNotices:
        try:
            await self._listen()  # the first connection: a failure here is the start-up's failure
        except Exception as exc:
            await self._engine.dispose()
            raise StoreUnavailable(f"The database ({self._describe}) cannot be listened to: {exc}") from None
        self._keeper = asyncio.create_task(self._keep_listening(), name="change-notices")
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await run_shielded(self._close())

    async def _close(self) -> None:
        self.listening = False
        keeper, self._keeper = self._keeper, None
        if keeper is not None:
            keeper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await keeper
        await self._drop_connection()
        await self._engine.dispose()

    async def _listen(self) -> None:
        conn = await self._engine.connect()
        try:
            raw = (await conn.get_raw_connection()).driver_connection
            assert raw is not None
            self._dropped.clear()
            raw.add_termination_listener(lambda _conn: self._dropped.set())
            await raw.add_listener(CHANNEL, self._deliver)
        except BaseException:
            await conn.close()
            raise
        self._conn, self._raw = conn, raw
        self._lost()  # whatever was written before this moment was not heard
        self.connections += 1
        self.listening = True

    async def _keep_listening(self) -> None:
        while True:
            await self._until_dropped()
            self.listening = False
            self._lost()
            logger.warning("The database connection that hears other nodes' changes was lost; reconnecting")
            await self._drop_connection()
            for delay in itertools.chain(RECONNECT_DELAYS_S, itertools.repeat(RECONNECT_DELAYS_S[-1])):
                await asyncio.sleep(delay)
                try:
                    await self._listen()
                except Exception as exc:
                    logger.debug("Listening for changes failed again: %s", exc)
                    continue
                logger.info("Listening for other nodes' changes again")
                break

    async def _until_dropped(self) -> None:
        """Return once the listening connection is known to be gone: closed, or silent to a probe."""
        while True:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._dropped.wait(), PROBE_EVERY_S)
                return
            raw = self._raw
            if raw is None:
                return
            try:
                await asyncio.wait_for(raw.fetchval("SELECT 1"), PROBE_EVERY_S)
            except Exception:
                return

    async def _drop_connection(self) -> None:
        conn, self._conn, self._raw = self._conn, None, None
        if conn is not None:
            with contextlib.suppress(Exception):
                await conn.invalidate()  # never back to a pool: NullPool, and it may be dead already

    def _deliver(self, _conn: object, _pid: int, _channel: str, payload: str) -> None:
        kind, _, key = payload.partition(":")
        for handler in self._handlers.get(kind, ()):
            try:
                handler(key)
            except Exception:
                logger.exception("A change handler failed for %s", payload)

    def _lost(self) -> None:
        for handler in self._lost_handlers:
            try:
                handler()
            except Exception:
                logger.exception("A handler of lost changes failed")
