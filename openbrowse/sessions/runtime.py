"""What a SessionWorker needs from the rest of the service, and the seams it talks to.

``SlotLease`` is what the slot pool hands out; ``Engine`` is one run's browser-plus-agent (see ``run.py``).
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import importlib
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING, Any, Protocol

from openbrowse.config import Settings
from openbrowse.domain.ids import SessionId
from openbrowse.domain.runs import Salvage, TurnOutcome
from openbrowse.domain.sessions import SessionRecord
from openbrowse.llm.tls import share_httpx_default_context
from openbrowse.profiles.service import ProfileService
from openbrowse.sessions.activity import ActivityBoard
from openbrowse.store.feed import FeedRepo
from openbrowse.store.sessions import SessionRepo

if TYPE_CHECKING:
    from openbrowse.sessions.manager import SessionManager


ENGINE_MODULE = "openbrowse.sessions.run"


class SlotLease(Protocol):
    """A display slot held by one run (implemented by :class:`openbrowse.slots.pool.SlotLease`)."""

    async def start_browser(self) -> object: ...

    def park(self, release_callback: Callable[[], Awaitable[None]]) -> None: ...

    def unpark(self) -> bool: ...


class LiveSlot(Protocol):
    """What the live view needs of a running slot (implemented by :class:`openbrowse.slots.slot.Slot`)."""

    @property
    def novnc_port(self) -> int: ...

    @property
    def novnc_ws_url(self) -> str:
        """websockify's WebSocket URL with the slot's secret (it refuses clients without it)."""
        ...

    @property
    def view_only(self) -> bool: ...

    async def ensure_vnc(self) -> None: ...

    async def add_viewer(self) -> int:
        """Count a live viewer in (starting the VNC side if needed); returns the ticket for remove_viewer."""
        ...

    def remove_viewer(self, ticket: int) -> None: ...

    async def set_view_only(self, view_only: bool) -> None: ...


class SlotProvider(Protocol):
    def acquire(
        self, owner: str, on_wait: Callable[[int], Awaitable[None]] | None = None
    ) -> AbstractAsyncContextManager[SlotLease]: ...


class Engine(Protocol):
    """One run's browser and agent, from launch to close."""

    async def launch(self, lease: Any, task: str) -> None: ...

    async def wait_died(self) -> BaseException:
        """Completes with the error when an essential process of the run's browser stack dies."""
        ...

    async def run_turn(self, task: str) -> TurnOutcome: ...

    async def salvage(self) -> Salvage: ...

    def live_slot(self) -> LiveSlot | None:
        """The slot whose display shows this run's browser, while it is up."""
        ...

    async def close(self) -> None: ...


EngineFactory = Callable[[SessionRecord], Awaitable[Engine]]
NeverStartedCheck = Callable[[SessionRecord], "str | None"]
LiveUrl = Callable[[SessionId], str]


class EngineLoader:
    """Makes engines. browser-use and the provider SDKs take about a second to import; entering the loader
    imports them in a worker thread and returns when done, so the server reports ready only with the engine
    loaded and the first run after a start waits for nothing a later run does not (the pool's spare browser
    starts meanwhile). See "Start-up" in docs/architecture.md.
    """

    def __init__(
        self,
        settings: Settings,
        sessions: SessionRepo,
        feed: FeedRepo,
        activity: ActivityBoard | None = None,
        profiles: ProfileService | None = None,
    ) -> None:
        self._settings = settings
        self._sessions = sessions
        self._feed = feed
        self._activity = activity or ActivityBoard()
        self._profiles = profiles
        self._loading: asyncio.Task[Any] | None = None

    async def __aenter__(self) -> EngineLoader:
        self._loading = asyncio.create_task(_import_engine(), name="engine-import")
        try:
            await asyncio.shield(self._loading)
        except asyncio.CancelledError:  # shut down while booting: the import thread cannot stop, wait for it
            with contextlib.suppress(Exception):
                await asyncio.shield(self._loading)
            raise
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        if self._loading is not None:
            with contextlib.suppress(Exception):
                await asyncio.shield(self._loading)

    def ready(self) -> bool:
        """True once browser-use is imported: making an engine no longer waits."""
        return self._loading is not None and self._loading.done()

    async def make(self, record: SessionRecord) -> Engine:
        assert self._loading is not None, "EngineLoader was not entered"
        module = await asyncio.shield(self._loading)
        engine: Engine = module.AgentEngine(
            self._settings,
            record,
            self._sessions,
            self._feed,
            activity=self._activity.reporter(record.id),
            profiles=self._profiles,
        )
        return engine


async def _import_engine() -> Any:
    share_httpx_default_context()
    module = await asyncio.to_thread(importlib.import_module, ENGINE_MODULE)
    # browser-use runs a full gc.collect() on the event loop when an agent closes; with the hundreds of
    # thousands of objects its import leaves, that stalled every request for hundreds of ms. Frozen objects
    # are never scanned again.
    gc.freeze()
    return module


class WorkerRuntime:
    """Shared services for workers. Built by the app; the manager binds itself on construction."""

    def __init__(
        self,
        settings: Settings,
        sessions: SessionRepo,
        feed: FeedRepo,
        pool: SlotProvider,
        make_engine: EngineFactory,
        never_started_problem: NeverStartedCheck,
        live_url: LiveUrl,
        engine_ready: Callable[[], bool] = lambda: True,
    ) -> None:
        self.settings = settings
        self.sessions = sessions
        self.feed = feed
        self.pool = pool
        self.make_engine = make_engine
        self.never_started_problem = never_started_problem
        self.live_url = live_url
        self.engine_ready = engine_ready
        self._manager: SessionManager | None = None

    def bind(self, manager: SessionManager) -> None:
        self._manager = manager

    @property
    def manager(self) -> SessionManager:
        if self._manager is None:
            raise RuntimeError("WorkerRuntime is not bound to a SessionManager")
        return self._manager
