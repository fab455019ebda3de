"""Each run's engine on a worker thread with its own event loop, so browser-use never holds the API's loop.

browser-use's CPU work (its event bus and watchdogs, CDP message handling, DOM serialisation) runs in long
stretches without yielding; on the API's loop every request waited for it. :class:`HostedEngine` is the
:class:`~openbrowse.sessions.runtime.Engine` the worker sees, on the API loop: it builds the real engine on its
own :class:`~openbrowse.sessions.loop_thread.LoopThread` and forwards each call there (results, exception types
and cancellation carry across; see :func:`~openbrowse.sessions.loop_thread.run_on`).

The engine reaches what belongs to the API loop (the SQLite repos, the activity board and its stream wake-ups,
the slot lease and its processes, the profile locks) only through the ``Home*`` bridges below, which run each
call on the API loop. The engine holds no other object of the API loop.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from openbrowse.domain.activity import ActivityKind, ActivityReporter, CodeStatus
from openbrowse.domain.feed import FeedEntry, Message
from openbrowse.domain.ids import SessionId
from openbrowse.domain.runs import Salvage, TurnOutcome
from openbrowse.domain.sessions import SessionRecord
from openbrowse.errors import ProcessDied
from openbrowse.memory import trim_malloc
from openbrowse.profiles.jar import Jar
from openbrowse.profiles.service import MergeReport, ProfileService
from openbrowse.sessions.loop_thread import LoopThread, post_to, run_on
from openbrowse.sessions.scripts import HomeScriptHost
from openbrowse.shielding import run_shielded
from openbrowse.store.feed import FeedRepo
from openbrowse.store.sessions import SessionRepo

if TYPE_CHECKING:
    from openbrowse.sessions.runtime import Engine, LiveSlot, SlotLease

T = TypeVar("T")

THREAD_PREFIX = "engine-"


def engine_threads() -> int:
    """Engine threads running now (``/health/details``): one per live engine, none once every engine closed."""
    return sum(1 for thread in threading.enumerate() if thread.name.startswith(THREAD_PREFIX))


class HomeLoop:
    """The API's event loop, as an engine thread reaches it."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop

    async def call(self, make: Callable[[], Awaitable[T]]) -> T:
        """Run ``make()`` on the API loop and return its result (cancellation and errors carry across)."""
        return await run_on(self._loop, make)

    def post(self, callback: Callable[..., object], *args: Any) -> None:
        """Run a quick synchronous ``callback`` on the API loop, in order, without waiting for it."""
        post_to(self._loop, callback, *args)


class HomeSessions:
    """:class:`~openbrowse.sessions.runtime.SessionRows` for an engine thread."""

    def __init__(self, home: HomeLoop, repo: SessionRepo) -> None:
        self._home = home
        self._repo = repo

    async def get(self, session_id: str) -> SessionRecord:
        return await self._home.call(lambda: self._repo.get(session_id))

    async def update(self, session_id: SessionId, **changes: Any) -> SessionRecord:
        return await self._home.call(lambda: self._repo.update(session_id, **changes))


class HomeFeed:
    """:class:`~openbrowse.sessions.runtime.FeedLog` for an engine thread."""

    def __init__(self, home: HomeLoop, repo: FeedRepo) -> None:
        self._home = home
        self._repo = repo

    async def append(self, session_id: SessionId, entry: FeedEntry) -> Message:
        return await self._home.call(lambda: self._repo.append(session_id, entry))

    async def of_types(self, session_id: str, *types: str) -> list[Message]:
        return await self._home.call(lambda: self._repo.of_types(session_id, *types))


class HomeActivity:
    """An :class:`ActivityReporter` for an engine thread: each report is applied on the API loop, in order."""

    def __init__(self, home: HomeLoop, reporter: ActivityReporter) -> None:
        self._home = home
        self._reporter = reporter

    def begin(self, label: str, kind: ActivityKind, *, step: int | None = None) -> None:
        self._home.post(lambda: self._reporter.begin(label, kind, step=step))

    def stream(self, text: str) -> None:
        self._home.post(self._reporter.stream, text)

    def finish(self) -> None:
        self._home.post(self._reporter.finish)

    def code(self, name: str, code: str, status: CodeStatus) -> None:
        self._home.post(self._reporter.code, name, code, status)


class HomeProfiles:
    """:class:`~openbrowse.sessions.profile_sync.ProfileStore` for an engine thread (the locks live on the API loop)."""

    def __init__(self, home: HomeLoop, service: ProfileService) -> None:
        self._home = home
        self._service = service

    async def snapshot(self, profile_id: str, base_path: Path) -> Jar:
        return await self._home.call(lambda: self._service.snapshot(profile_id, base_path))

    async def merge_back(self, profile_id: str, base: Jar, ours: Jar) -> MergeReport:
        return await self._home.call(lambda: self._service.merge_back(profile_id, base, ours))


class HomeSlot:
    """:class:`~openbrowse.sessions.runtime.SlotEndpoints` for an engine thread."""

    def __init__(self, home: HomeLoop, slot: Any, cdp_url: str, cdp_ws_url: str) -> None:
        self._home = home
        self._slot = slot
        self.cdp_url = cdp_url
        self.cdp_ws_url = cdp_ws_url

    async def watch(self) -> ProcessDied:
        died: ProcessDied = await self._home.call(self._slot.watch)
        return died

    @property
    def uploads_dir(self) -> Path:
        return Path(self._slot.uploads_dir)  # a fixed path: no need to ask the API loop

    @property
    def downloads_dir(self) -> Path:
        return Path(self._slot.downloads_dir)

    @property
    def script_host(self) -> HomeScriptHost | None:
        """The slot's own script host, reached on the API loop (None while the slot has none)."""
        host = self._slot.script_host
        return None if host is None else HomeScriptHost(self._home, host)


class HomeLease:
    """:class:`~openbrowse.sessions.runtime.BrowserLease` for an engine thread; tells the host which slot it got."""

    def __init__(self, home: HomeLoop, lease: SlotLease, on_slot: Callable[[Any], None]) -> None:
        self._home = home
        self._lease = lease
        self._on_slot = on_slot

    async def start_browser(self) -> HomeSlot:
        slot, cdp_url, cdp_ws_url = await self._home.call(self._start_at_home)
        return HomeSlot(self._home, slot, cdp_url, cdp_ws_url)

    async def _start_at_home(self) -> tuple[Any, str, str]:
        slot: Any = await self._lease.start_browser()
        self._on_slot(slot)
        return slot, slot.cdp_url, slot.cdp_ws_url


EngineBuilder = Callable[[HomeLoop], "Engine"]


class HostedEngine:
    """Implements :class:`~openbrowse.sessions.runtime.Engine` on the API loop; the real one runs on its thread."""

    def __init__(self, thread: LoopThread, home: HomeLoop, inner: Engine) -> None:
        self._thread = thread
        self._home = home
        self._inner = inner
        self._slot: LiveSlot | None = None
        self.on_human_needed: Callable[[str], Awaitable[None]] | None = None
        inner.on_human_needed = self._human_needed_at_home

    async def _human_needed_at_home(self, reason: str) -> None:
        """The agent's ``wait_for_human``, on the engine's thread: handed to the worker on the API loop."""
        hook = self.on_human_needed
        if hook is None:
            raise RuntimeError("No one can take over this session.")
        await self._home.call(lambda: hook(reason))

    async def pause(self) -> None:
        await self._thread.run(self._inner.pause)

    async def wait_paused(self) -> None:
        await self._thread.run(self._inner.wait_paused)

    async def resume(self, note: str) -> None:
        await self._thread.run(lambda: self._inner.resume(note))

    @classmethod
    async def start(cls, name: str, build: EngineBuilder, *, nice: int = 0) -> HostedEngine:
        """Start the thread and build the engine on it (so everything it creates belongs to its loop).

        ``nice``: how far below the API thread's the engine thread's CPU priority is (``ENGINE_NICE``)."""
        thread = LoopThread(THREAD_PREFIX + name, nice=nice)
        await thread.__aenter__()
        home = HomeLoop(asyncio.get_running_loop())
        try:
            inner = await thread.run(lambda: _built(build, home))
        except BaseException:
            await run_shielded(thread.aclose())
            raise
        return cls(thread, home, inner)

    @property
    def thread_id(self) -> int | None:
        """The engine thread's id (None once closed)."""
        return self._thread.ident

    async def launch(self, lease: Any, task: str) -> None:
        at_home = HomeLease(self._home, lease, self._remember_slot)
        await self._thread.run(lambda: self._inner.launch(at_home, task))

    def _remember_slot(self, slot: LiveSlot) -> None:
        self._slot = slot

    async def wait_died(self) -> BaseException:
        if self._slot is None:
            await asyncio.Event().wait()
        slot: Any = self._slot
        died: BaseException = await slot.watch()
        return died

    async def run_turn(self, task: str) -> TurnOutcome:
        return await self._thread.run(lambda: self._inner.run_turn(task))

    async def salvage(self) -> Salvage:
        if self._thread.ident is None:
            # a stop records what the interrupted turn kept after the engine closed; with its thread joined, the
            # engine's memory is this thread's alone, and salvaging only reads it
            return await self._inner.salvage()
        return await self._thread.run(self._inner.salvage)

    def live_slot(self) -> LiveSlot | None:
        return self._slot if self._inner.live_slot() is not None else None

    async def save_profile(self) -> None:
        await self._thread.run(self._inner.save_profile)

    async def close(self) -> None:
        """Close the engine on its thread, then stop and join the thread. A cancellation (even a repeated one)
        waits for all of it: the thread is never stopped under an engine still closing on it."""
        await run_shielded(self._close())

    async def _close(self) -> None:
        try:
            await self._thread.run(self._inner.close)
        finally:
            await self._thread.aclose()
            await asyncio.to_thread(trim_malloc)  # the run's memory goes back to the kernel


async def _built(build: EngineBuilder, home: HomeLoop) -> Engine:
    return build(home)
