"""ProfileRepo: the ``profiles`` table (profile jars themselves live as files under ``data/profiles/``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from openbrowse.store.db import Database


class ProfileRepo:
    def __init__(self, db: Database) -> None:
        self._db = db

    async def exists(self, profile_id: str) -> bool:
        row = await self._db.fetch_one("SELECT 1 FROM profiles WHERE id = ?", (profile_id,))
        return row is not None
