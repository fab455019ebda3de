"""WorkspaceRepo: the ``workspaces`` table (spec §27.1, §26.1). The files are on disk, not here."""

from __future__ import annotations

from typing import TYPE_CHECKING

import sqlalchemy as sa
from sqlalchemy.engine import RowMapping

from openbrowse.domain.clock import from_wire, to_wire
from openbrowse.domain.workspaces import WorkspaceRecord
from openbrowse.store.schema import workspaces as table

if TYPE_CHECKING:
    from datetime import datetime

    from openbrowse.store.db import Database


def _from_row(row: RowMapping) -> WorkspaceRecord:
    return WorkspaceRecord(
        id=str(row["id"]),
        name=row["name"],
        created_at=from_wire(row["created_at"]),
        updated_at=from_wire(row["updated_at"]),
    )


class WorkspaceRepo:
    def __init__(self, db: Database) -> None:
        self._db = db

    async def insert(self, record: WorkspaceRecord) -> WorkspaceRecord:
        values = {
            "id": record.id,
            "name": record.name,
            "created_at": to_wire(record.created_at),
            "updated_at": to_wire(record.updated_at),
        }
        async with self._db.transaction() as conn:
            await conn.execute(table.insert().values(values))
        return record

    async def find(self, workspace_id: str) -> WorkspaceRecord | None:
        row = await self._db.fetch_one(sa.select(table).where(table.c.id == workspace_id))
        return _from_row(row) if row is not None else None

    async def page(self, page: int, page_size: int) -> tuple[list[WorkspaceRecord], int]:
        total = await self._db.scalar(sa.select(sa.func.count()).select_from(table))
        rows = await self._db.fetch_all(
            sa.select(table)
            .order_by(table.c.created_at.desc(), self._db.insertion_order(table).desc())
            .limit(page_size)
            .offset((page - 1) * page_size)
        )
        return [_from_row(row) for row in rows], int(total or 0)

    async def rename(self, workspace_id: str, name: str | None, updated_at: datetime) -> WorkspaceRecord | None:
        """Set the name (and ``updatedAt``); None when there is no such workspace."""
        async with self._db.transaction() as conn:
            row = (
                (
                    await conn.execute(
                        table.update()
                        .where(table.c.id == workspace_id)
                        .values(name=name, updated_at=to_wire(updated_at))
                        .returning(*table.c)
                    )
                )
                .mappings()
                .first()
            )
        return _from_row(row) if row is not None else None

    async def delete(self, workspace_id: str) -> bool:
        async with self._db.transaction() as conn:
            result = await conn.execute(table.delete().where(table.c.id == workspace_id))
            return (result.rowcount or 0) > 0
