"""Ordered, additive migrations that run at start-up, once, even when several processes start at once.

Each backend has its folder of numbered SQL scripts (``migrations/`` for SQLite, ``migrations_postgresql/`` for
PostgreSQL, which starts from the whole schema at 0011). SQLite keeps its version in ``PRAGMA user_version`` (so
databases from before this module move forward as they always did) and serialises starters with ``BEGIN
IMMEDIATE``; PostgreSQL keeps it in ``schema_migrations`` and serialises them with a transaction-scoped advisory
lock. Either way a starter re-reads the version once it holds the lock, so a script never runs twice, and each
script commits together with its version (both dialects have transactional DDL).
"""

from __future__ import annotations

import logging
import sqlite3
from importlib import resources

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection

logger = logging.getLogger(__name__)

MIGRATION_LOCK_KEY = 0x0B_5E_34
"""The advisory lock every PostgreSQL starter takes around its migrations (any constant, the same everywhere)."""


def migration_scripts(folder_name: str) -> list[tuple[int, str]]:
    folder = resources.files("openbrowse.store") / folder_name
    scripts: list[tuple[int, str]] = []
    for entry in folder.iterdir():
        name = entry.name
        if name.endswith(".sql") and name[:4].isdigit():
            scripts.append((int(name[:4]), entry.read_text(encoding="utf-8")))
    return sorted(scripts)


def sqlite_statements(script: str) -> list[str]:
    """The script's statements, one by one (SQLite's own notion of a complete statement)."""
    statements: list[str] = []
    pending = ""
    for line in script.splitlines(keepends=True):
        pending += line
        if sqlite3.complete_statement(pending):
            statements.append(pending.strip())
            pending = ""
    if pending.strip() and not all(part.strip().startswith("--") or not part.strip() for part in pending.splitlines()):
        statements.append(pending.strip())
    return statements


async def migrate_sqlite(conn: AsyncConnection) -> None:
    """On a connection outside any SQLAlchemy transaction whose driver runs in autocommit mode."""
    raw = (await conn.get_raw_connection()).driver_connection
    assert raw is not None
    await raw.execute("BEGIN IMMEDIATE")
    try:
        rows = list(await raw.execute_fetchall("PRAGMA user_version"))
        current = int(rows[0][0]) if rows else 0
        for version, script in migration_scripts("migrations"):
            if version > current:
                logger.info("Applying database migration %04d (SQLite)", version)
                for statement in sqlite_statements(script):  # executescript would commit the lock away first
                    await raw.execute(statement)
                await raw.execute(f"PRAGMA user_version={version}")
        await raw.execute("COMMIT")
    except BaseException:
        await raw.execute("ROLLBACK")
        raise


async def migrate_postgresql(conn: AsyncConnection) -> None:
    """Inside ``conn``'s transaction, which the caller commits."""
    await conn.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": MIGRATION_LOCK_KEY})
    await conn.execute(text("CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY)"))
    current = (await conn.execute(text("SELECT COALESCE(MAX(version), 0) FROM schema_migrations"))).scalar_one()
    raw = (await conn.get_raw_connection()).driver_connection
    assert raw is not None
    for version, script in migration_scripts("migrations_postgresql"):
        if version > int(current):
            logger.info("Applying database migration %04d (PostgreSQL)", version)
            await raw.execute(script)  # the simple protocol: a script of several statements, no parameters
            await conn.execute(text("INSERT INTO schema_migrations (version) VALUES (:v)"), {"v": version})
