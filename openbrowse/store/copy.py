"""``openbrowse db copy --from URL --to URL``: move a store to another backend (spec §26.1 migration note).

Every durable table is copied row by row, in batches, into a target that is migrated first and must be empty (a
copy never merges into live data). Sequence numbers (feed order, the webhook outbox) are kept as they are, and
PostgreSQL's identity counters are moved past them, so what the copy holds orders exactly as the source did.
Stop the server that uses the source first: rows it writes during the copy would be missed.
"""

from __future__ import annotations

import sqlalchemy as sa

from openbrowse.errors import ConfigError
from openbrowse.store import schema
from openbrowse.store.db import Database
from openbrowse.store.target import StoreTarget

BATCH_ROWS = 500
TABLES = (schema.sessions, schema.messages, schema.profiles, schema.browsers, schema.webhook_outbox)
"""In an order that keeps references whole (a message's session comes first)."""
_IDENTITY_COLUMNS = {"messages": "seq", "webhook_outbox": "seq"}


async def copy_store(source: StoreTarget, target: StoreTarget) -> dict[str, int]:
    """Copy every table; returns the rows copied per table. ConfigError (one sentence) when the target has data."""
    if source == target:
        raise ConfigError("--from and --to name the same database.")
    async with Database(source, pool_size=2) as origin, Database(target, pool_size=2) as destination:
        for table in TABLES:
            if await destination.scalar(sa.select(sa.func.count()).select_from(table)):
                raise ConfigError(
                    f"The target already holds {table.name}: copy into an empty database (a copy never merges)."
                )
        copied: dict[str, int] = {}
        async with destination.transaction() as conn:
            for table in TABLES:
                copied[table.name] = 0
                offset = 0
                key = next(iter(table.primary_key.columns))
                while True:
                    rows = await origin.fetch_all(sa.select(table).order_by(key).limit(BATCH_ROWS).offset(offset))
                    if not rows:
                        break
                    await conn.execute(table.insert(), [dict(row) for row in rows])
                    copied[table.name] += len(rows)
                    offset += len(rows)
                column = _IDENTITY_COLUMNS.get(table.name)
                if column and destination.kind == "postgresql" and copied[table.name]:
                    await conn.execute(
                        sa.text(
                            f"SELECT setval(pg_get_serial_sequence('{table.name}', '{column}'),"
                            f" (SELECT MAX({column}) FROM {table.name}))"
                        )
                    )
        return copied
