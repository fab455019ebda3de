"""ProfileService: the profiles API's facade and the one writer of jars (spec §4.9, §9).

Every write of a jar (import, a run's merge back, delete) holds that profile's asyncio lock, so writes never
interleave; the lock is also what makes a run's snapshot consistent. File work runs in a thread. The rows
(metadata) live in SQLite behind the :class:`ProfileRows` protocol, implemented by the store.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from openbrowse.domain.clock import Clock, utc_now
from openbrowse.domain.ids import ProfileId
from openbrowse.domain.profiles import ProfileRecord, is_valid_profile_id, new_profile_id
from openbrowse.errors import MalformedRequest, ProfileNotFound
from openbrowse.profiles.files import JarFiles, ensure_private_dir, read_json_file, write_private_json
from openbrowse.profiles.jar import Jar, cookie_domains, empty_jar, normalise_state, read_jar
from openbrowse.profiles.merge import three_way_merge


class ProfileRows(Protocol):
    async def insert(self, record: ProfileRecord) -> ProfileRecord: ...

    async def find(self, profile_id: str) -> ProfileRecord | None: ...

    async def page(self, page: int, page_size: int, query: str | None) -> tuple[list[ProfileRecord], int]: ...

    async def update(self, profile_id: str, **changes: Any) -> ProfileRecord: ...

    async def delete(self, profile_id: str) -> bool: ...


@dataclass(frozen=True, slots=True)
class MergeReport:
    cookies: int
    origins: int


class ProfileService:
    def __init__(self, rows: ProfileRows, directory: Path, clock: Clock = utc_now) -> None:
        self._rows = rows
        self._files = JarFiles(directory)
        self._clock = clock
        self._locks: dict[str, asyncio.Lock] = {}

    def lock(self, profile_id: str) -> asyncio.Lock:
        return self._locks.setdefault(profile_id, asyncio.Lock())

    # -- metadata ----------------------------------------------------------------------------------------------
    async def create(self, name: str | None, user_id: str | None) -> ProfileRecord:
        now = self._clock()
        record = ProfileRecord(
            id=new_profile_id(), name=name, user_id=user_id, created_at=now, updated_at=now, cookie_domains=()
        )
        async with self.lock(record.id):
            await asyncio.to_thread(self._files.write, record.id, empty_jar())
            return await self._rows.insert(record)

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
        async with self.lock(profile_id):
            if not await self._rows.delete(profile_id):
                raise ProfileNotFound()
            await asyncio.to_thread(self._files.delete, profile_id)

    # -- storage state -----------------------------------------------------------------------------------------
    async def import_state(self, profile_id: str, payload: object) -> ProfileRecord:
        """Replace the jar with an imported storage state, creating the profile when the id is new."""
        if not is_valid_profile_id(profile_id):
            raise MalformedRequest("The profile id may contain only letters, digits, '.', '_' and '-', and no '..'.")
        jar = normalise_state(payload)
        async with self.lock(profile_id):
            record = await self._rows.find(profile_id)
            await asyncio.to_thread(self._replace_jar, profile_id, jar)
            now = self._clock()
            domains = cookie_domains(jar)
            if record is None:
                return await self._rows.insert(
                    ProfileRecord(
                        id=ProfileId(profile_id),
                        name=None,
                        user_id=None,
                        created_at=now,
                        updated_at=now,
                        cookie_domains=domains,
                    )
                )
            return await self._rows.update(profile_id, updated_at=now, cookie_domains=domains)

    def _replace_jar(self, profile_id: str, jar: Jar) -> None:
        self._files.back_up(profile_id)
        self._files.write(profile_id, jar)

    async def export_state(self, profile_id: str) -> Jar:
        await self.get(profile_id)
        async with self.lock(profile_id):
            jar = await asyncio.to_thread(self._files.read, profile_id)
        return jar if jar is not None else empty_jar()

    # -- runs --------------------------------------------------------------------------------------------------
    async def snapshot(self, profile_id: str, base_path: Path) -> Jar:
        """The jar a run starts from, copied to the run's private ``profile_base.json``; updates ``lastUsedAt``."""
        async with self.lock(profile_id):
            await self.get(profile_id)
            jar = await asyncio.to_thread(self._files.read, profile_id)
            jar = jar if jar is not None else empty_jar()
            await asyncio.to_thread(write_private_json, base_path, jar)
            await self._rows.update(profile_id, last_used_at=self._clock())
        return jar

    async def merge_back(self, profile_id: str, base: Jar, ours: Jar) -> MergeReport:
        """Merge a run's state into the jar on disk (three ways, atomically). ProfileNotFound if it was deleted.

        Returns counts for the feed. Callers shield this call.
        """
        async with self.lock(profile_id):
            if await self._rows.find(profile_id) is None:
                raise ProfileNotFound()
            theirs = await asyncio.to_thread(self._files.read, profile_id)
            merged = three_way_merge(base, ours, theirs if theirs is not None else empty_jar(), now=time.time())
            await asyncio.to_thread(self._files.write, profile_id, merged)
            await self._rows.update(profile_id, cookie_domains=cookie_domains(merged))
        return MergeReport(cookies=len(merged["cookies"]), origins=len(merged["origins"]))


def read_base(path: Path) -> Jar:
    """A run's private base copy (blocking)."""
    return read_jar(read_json_file(path))


async def save_base(path: Path, jar: Jar) -> None:
    await asyncio.to_thread(write_private_json, path, jar)


def prepare_directory(directory: Path) -> None:
    """Create the private jar directory and drop temp files a killed writer left (the jars themselves are whole)."""
    ensure_private_dir(directory)
    for leftover in directory.glob(".*.tmp"):
        leftover.unlink(missing_ok=True)
