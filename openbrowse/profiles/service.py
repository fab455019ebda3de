"""ProfileService: the profiles API's facade and the one writer of jars (spec §4.9, §9).

Jars live in the database with their rows (spec §26.1), behind the :class:`ProfileRows` protocol implemented by
the store. Every write of a jar (import, a run's merge back) happens inside :meth:`ProfileRows.locked`, a write
transaction that holds the profile's row, so writes never interleave, in this process or any other, and a run's
snapshot is consistent. Jar files of an install from before are moved into the database at start-up
(:meth:`ProfileService.adopt_files`).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from openbrowse.domain.clock import Clock, utc_now
from openbrowse.domain.ids import ProfileId
from openbrowse.domain.profiles import ProfileRecord, is_valid_profile_id, new_profile_id
from openbrowse.errors import MalformedRequest, ProfileNotFound
from openbrowse.profiles.files import JarFiles, read_json_file, write_private_json
from openbrowse.profiles.jar import Jar, cookie_domains, empty_jar, normalise_state, read_jar
from openbrowse.profiles.merge import three_way_merge


class LockedRow(Protocol):
    record: ProfileRecord
    jar: Any

    async def write(self, jar: Any, *, keep_backup: bool = False, **changes: Any) -> ProfileRecord: ...

    async def adopt(self, jar: Any, backup: Any) -> None: ...


class ProfileRows(Protocol):
    async def insert(self, record: ProfileRecord, jar: Any = None) -> ProfileRecord: ...

    async def find(self, profile_id: str) -> ProfileRecord | None: ...

    async def read_jar(self, profile_id: str) -> Any: ...

    def locked(self, profile_id: str) -> AbstractAsyncContextManager[LockedRow]: ...

    async def without_jar(self) -> list[str]: ...

    async def page(self, page: int, page_size: int, query: str | None) -> tuple[list[ProfileRecord], int]: ...

    async def update(self, profile_id: str, **changes: Any) -> ProfileRecord: ...

    async def delete(self, profile_id: str) -> bool: ...


@dataclass(frozen=True, slots=True)
class MergeReport:
    cookies: int
    origins: int


def _jar_or_empty(raw: Any) -> Jar:
    try:
        return read_jar(raw) if raw is not None else empty_jar()
    except (MalformedRequest, ValueError):
        return empty_jar()


class ProfileService:
    def __init__(self, rows: ProfileRows, clock: Clock = utc_now) -> None:
        self._rows = rows
        self._clock = clock

    # -- metadata ----------------------------------------------------------------------------------------------
    async def create(self, name: str | None, user_id: str | None) -> ProfileRecord:
        now = self._clock()
        record = ProfileRecord(
            id=new_profile_id(), name=name, user_id=user_id, created_at=now, updated_at=now, cookie_domains=()
        )
        return await self._rows.insert(record, empty_jar())

    async def get(self, profile_id: str) -> ProfileRecord:
        record = await self._rows.find(profile_id)
        if record is None:
            raise ProfileNotFound()
        return record

    async def exists(self, profile_id: str) -> bool:
        return await self._rows.find(profile_id) is not None

    async def page(self, page: int, page_size: int, query: str | None) -> tuple[list[ProfileRecord], int]:
        return await self._rows.page(page, page_size, query)

    async def update(self, profile_id: str, *, name: str | None, user_id: str | None) -> ProfileRecord:
        """Apply the non-null fields (``null`` never clears)."""
        await self.get(profile_id)
        changes: dict[str, Any] = {"updated_at": self._clock()}
        if name is not None:
            changes["name"] = name
        if user_id is not None:
            changes["user_id"] = user_id
        return await self._rows.update(profile_id, **changes)

    async def delete(self, profile_id: str) -> None:
        if not await self._rows.delete(profile_id):
            raise ProfileNotFound()

    # -- storage state -----------------------------------------------------------------------------------------
    async def import_state(self, profile_id: str, payload: object) -> ProfileRecord:
        """Replace the jar with an imported storage state (the old one kept as the import backup), creating the
        profile when the id is new."""
        if not is_valid_profile_id(profile_id):
            raise MalformedRequest("The profile id may contain only letters, digits, '.', '_' and '-', and no '..'.")
        jar = normalise_state(payload)
        now = self._clock()
        domains = cookie_domains(jar)
        with contextlib.suppress(ProfileNotFound):
            async with self._rows.locked(profile_id) as row:
                return await row.write(jar, keep_backup=True, updated_at=now, cookie_domains=domains)
        record = ProfileRecord(
            id=ProfileId(profile_id), name=None, user_id=None, created_at=now, updated_at=now, cookie_domains=domains
        )
        return await self._rows.insert(record, jar)

    async def export_state(self, profile_id: str) -> Jar:
        return _jar_or_empty(await self._rows.read_jar(profile_id))

    # -- runs --------------------------------------------------------------------------------------------------
    async def snapshot(self, profile_id: str, base_path: Path) -> Jar:
        """The jar a run starts from, copied to the run's private ``profile_base.json``; updates ``lastUsedAt``."""
        async with self._rows.locked(profile_id) as row:
            jar = _jar_or_empty(row.jar)
            await row.write(jar, last_used_at=self._clock())
        await asyncio.to_thread(write_private_json, base_path, jar)
        return jar

    async def merge_back(self, profile_id: str, base: Jar, ours: Jar) -> MergeReport:
        """Merge a run's state into the stored jar (three ways, under the row lock). ProfileNotFound if it was
        deleted. Returns counts for the feed. Callers shield this call."""
        async with self._rows.locked(profile_id) as row:
            merged = three_way_merge(base, ours, _jar_or_empty(row.jar), now=time.time())
            await row.write(merged, cookie_domains=cookie_domains(merged))
        return MergeReport(cookies=len(merged["cookies"]), origins=len(merged["origins"]))

    # -- an install from before jars moved into the database ---------------------------------------------------
    async def adopt_files(self, directory: Path) -> int:
        """Move each jar file (and its import backup) under ``directory`` into its profile's row, then remove the
        files. Profiles whose file is missing get an empty jar. Returns how many profiles were adopted."""
        files = JarFiles(directory)
        adopted = 0
        for profile_id in await self._rows.without_jar():
            jar = await asyncio.to_thread(files.read, profile_id)
            backup = await asyncio.to_thread(_read_backup, files, profile_id)
            with contextlib.suppress(ProfileNotFound):
                async with self._rows.locked(profile_id) as row:
                    if row.jar is None:
                        await row.adopt(jar if jar is not None else empty_jar(), backup)
                        adopted += 1
            await asyncio.to_thread(files.delete, profile_id)  # a jar is a credential: one copy, in the database
        return adopted


def _read_backup(files: JarFiles, profile_id: str) -> Any:
    try:
        return read_json_file(files.backup_path(profile_id))
    except (OSError, ValueError):
        return None


def read_base(path: Path) -> Jar:
    """A run's private base copy (blocking)."""
    return read_jar(read_json_file(path))


async def save_base(path: Path, jar: Jar) -> None:
    await asyncio.to_thread(write_private_json, path, jar)
