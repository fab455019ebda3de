"""ProfileSync: one run's profile, loaded before the first step and merged back when the browser closes (§9).

Lifecycle, owned by the run's engine (or a raw browser's task):

    start()      snapshot the jar under the profile lock → ``data/sessions/{id}/profile_base.json`` (the base),
                 load cookies and storage into the browser, start collecting visited origins
    checkpoint() end of a keep-alive turn: export (open frames only) → three-way merge → base := merged
    finish()     the browser is about to close: export (every visited origin) → three-way merge; then close

Export and merge are shielded from cancellation and never leave a profile half-written. When nothing can be
saved (browser gone, profile deleted, disk error) a ``system``/``profile`` note says why. Notes and logs carry
counts and reasons only, never cookie or storage content.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Protocol

from openbrowse.errors import ProfileNotFound
from openbrowse.profiles.cdp import CdpFailure, CdpLink, StorageRead, web_origin
from openbrowse.profiles.jar import Cookie, Jar, empty_jar, origin_name, storage_items
from openbrowse.profiles.merge import CookieKey, cookie_key, three_way_merge
from openbrowse.profiles.service import MergeReport, save_base
from openbrowse.shielding import run_shielded

logger = logging.getLogger(__name__)

Notify = Callable[[str], Awaitable[None]]
EXPORT_TIMEOUT = 90.0
CLOSED_ORIGINS_TIMEOUT = 45.0
LOAD_TIMEOUT = 90.0
BASE_FILE = "profile_base.json"


class ProfileStore(Protocol):
    """The profile jars a run loads and merges back (the server's ``ProfileService``)."""

    async def snapshot(self, profile_id: str, base_path: Path) -> Jar: ...

    async def merge_back(self, profile_id: str, base: Jar, ours: Jar) -> MergeReport: ...


class ProfileSync:
    def __init__(self, profiles: ProfileStore, profile_id: str, base_path: Path, link: CdpLink, notify: Notify):
        self._profiles = profiles
        self.profile_id = profile_id
        self._base_path = base_path
        self._link = link
        self._notify = notify
        self._base: Jar = {"cookies": [], "origins": []}
        self._lock = asyncio.Lock()
        self._finished = False
        self._load_incomplete = False
        self._echo: dict[CookieKey, tuple[Cookie, Cookie]] = {}

    @classmethod
    async def start(
        cls, profiles: ProfileStore, profile_id: str, files_dir: Path, ws_url: str, notify: Notify
    ) -> ProfileSync | None:
        """Load the profile into the browser; None (with a note) when the profile no longer exists."""
        base_path = files_dir / BASE_FILE
        try:
            base = await profiles.snapshot(profile_id, base_path)
        except ProfileNotFound:
            await notify(f"Profile {profile_id} no longer exists; the browser starts without it.")
            return None
        link = CdpLink(ws_url)
        sync = cls(profiles, profile_id, base_path, link, notify)
        sync._base = base
        try:
            await link.open()
            failures = await asyncio.wait_for(link.apply(base), LOAD_TIMEOUT)
            sync._remember_echo(await link.cookies())
        except Exception:  # a browser that cannot take the jar still runs, without it
            logger.warning("Loading profile %s into the browser failed", profile_id, exc_info=True)
            sync._load_incomplete = True
            await notify(f"Profile {profile_id} could not be loaded into the browser completely.")
        except BaseException:
            await run_shielded(link.close())
            raise
        else:
            cookies, origins = len(base["cookies"]), len(base["origins"])
            note = f"Profile {profile_id} loaded: {cookies} cookie(s), storage of {origins} origin(s)."
            if failures:
                note += f" {failures} item(s) could not be set."
                sync._load_incomplete = True
            await notify(note)
        for origin in base["origins"]:
            if name := web_origin(origin_name(origin) or ""):
                link.visited.add(name)
        return sync

    async def checkpoint(self) -> None:
        """Merge what a keep-alive turn changed, before parking; the merged jar becomes the base."""
        await run_shielded(self._save(final=False))

    async def finish(self) -> None:
        """Merge everything back while CDP is still live, then drop the connection (idempotent)."""
        await run_shielded(self._finish())

    async def _finish(self) -> None:
        try:
            await self._save(final=True)
        finally:
            await self._link.close()

    async def _save(self, *, final: bool) -> None:
        async with self._lock:
            if self._finished:
                return
            self._finished = final
            try:
                ours = await asyncio.wait_for(self._export(read_closed_origins=final), EXPORT_TIMEOUT)
            except Exception:
                logger.warning("Exporting the browser state for profile %s failed", self.profile_id, exc_info=True)
                await self._notify(
                    f"Profile {self.profile_id} not saved: the browser state could not be read (the browser is gone)."
                )
                return
            try:
                report = await self._profiles.merge_back(self.profile_id, self._base, ours)
            except ProfileNotFound:
                await self._notify(f"Profile {self.profile_id} was deleted during the run; its changes were discarded.")
                return
            except Exception:
                logger.exception("Merging into profile %s failed; the profile is unchanged", self.profile_id)
                await self._notify(f"Profile {self.profile_id} not saved: writing the profile failed.")
                return
            # The next base is what this browser held, not ``merged``: a value another run won with never
            # reached this browser, and comparing against it would make the next merge revert it.
            self._base = ours
            if not final:
                await save_base(self._base_path, ours)
            await self._notify(
                f"Profile {self.profile_id} saved: {report.cookies} cookie(s), storage of {report.origins} origin(s)."
            )

    def _remember_echo(self, loaded: list[Cookie]) -> None:
        """How the browser echoes each base cookie right after the load (Chromium caps expiry at 400 days and
        adds priority and source fields): an exported cookie equal to its echo is the base cookie, unchanged."""
        base = {cookie_key(cookie): cookie for cookie in self._base["cookies"]}
        self._echo = {key: (cookie, base[key]) for cookie in loaded if (key := cookie_key(cookie)) in base}

    def _unecho(self, cookie: Cookie) -> Cookie:
        echo = self._echo.get(cookie_key(cookie))
        return echo[1] if echo is not None and echo[0] == cookie else cookie

    async def _export(self, *, read_closed_origins: bool) -> Jar:
        """The browser's state as a jar. Storage the export cannot see is reported as the base has it."""
        cookies = [self._unecho(cookie) for cookie in await self._link.cookies()]
        read = await self._link.read_open_frames()
        base_origins = {web_origin(origin_name(o) or "") for o in self._base["origins"]} - {None}
        if read_closed_origins:
            try:  # best effort: an origin left unread counts as unchanged
                await asyncio.wait_for(
                    self._link.read_local_storage(self._link.visited | {o for o in base_origins if o}, read),
                    CLOSED_ORIGINS_TIMEOUT,
                )
            except (CdpFailure, TimeoutError):
                logger.info("Reading closed origins for profile %s failed", self.profile_id, exc_info=True)
        ours: Jar = {"cookies": cookies, "origins": export_origins(read, self._base)}
        if self._load_incomplete:  # what never reached the browser must not look deleted by this run
            ours = three_way_merge(empty_jar(), ours, self._base, now=time.time())
        return ours


def export_origins(read: StorageRead, base: Jar) -> list[dict[str, object]]:
    """Read storage as jar origins; an origin or kind the export did not see keeps the base's entries."""
    base_items: dict[str, dict[str, dict[str, str]]] = {}
    for origin in base["origins"]:
        if name := origin_name(origin):
            base_items[name] = {kind: storage_items(origin, kind) for kind in ("localStorage", "sessionStorage")}
    names = set(read.local) | set(read.session) | set(base_items)
    origins: list[dict[str, object]] = []
    for name in sorted(names):
        seen = base_items.get(name, {})
        local = read.local.get(name, seen.get("localStorage", {}))
        session = read.session.get(name, seen.get("sessionStorage", {}))
        origins.append(
            {
                "origin": name,
                "localStorage": [{"name": k, "value": v} for k, v in local.items()],
                "sessionStorage": [{"name": k, "value": v} for k, v in session.items()],
            }
        )
    return origins
