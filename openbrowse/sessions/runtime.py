"""What a SessionWorker needs from the rest of the service, and the seams it talks to.

``SlotLease`` is what the slot pool hands out; ``Engine`` is one run's browser-plus-agent (see ``run.py``).
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import importlib
from collections import deque
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING, Any, Protocol

from openbrowse.config import Settings
from openbrowse.domain.feed import FeedEntry, Message
from openbrowse.domain.ids import SessionId
from openbrowse.domain.runs import Salvage, TurnOutcome
from openbrowse.domain.sessions import SessionRecord
from openbrowse.errors import ProcessDied
from openbrowse.llm.factory import provider_modules
from openbrowse.profiles.service import ProfileService
from openbrowse.sessions.activity import ActivityBoard
from openbrowse.sessions.policy import RunPolicy
from openbrowse.store.feed import FeedRepo
from openbrowse.store.sessions import SessionRepo
from openbrowse.upstream.httpx_tls import build_shared_context, share_httpx_default_context

if TYPE_CHECKING:
    from pathlib import Path


ENGINE_MODULE = "openbrowse.sessions.run"


class SessionRows(Protocol):
    """The session rows an engine reads and writes (a :class:`SessionRepo`)."""

    async def get(self, session_id: str) -> SessionRecord: ...

    async def update(self, session_id: SessionId, **changes: Any) -> SessionRecord: ...


class FeedLog(Protocol):
    """The feed an engine appends to and replays (a :class:`FeedRepo`)."""

    async def append(self, session_id: SessionId, entry: FeedEntry) -> Message: ...

    async def of_types(self, session_id: str, *types: str) -> list[Message]: ...


class SlotEndpoints(Protocol):
    """What an engine needs of its running slot: where its browser listens, and word when the slot dies."""

    @property
    def cdp_url(self) -> str: ...

    @property
    def cdp_ws_url(self) -> str: ...

    @property
    def uploads_dir(self) -> Path: ...

    @property
    def downloads_dir(self) -> Path: ...

    async def watch(self) -> ProcessDied: ...


class SlotLease(Protocol):
    """A display slot held by one run (implemented by :class:`openbrowse.slots.pool.SlotLease`)."""

    async def start_browser(self) -> SlotEndpoints:
        """Start the slot's browser (idempotent) and return where it listens."""
        ...

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

    async def launch(self, browser: Awaitable[SlotEndpoints], task: str) -> None:
        """Connect to the run's browser, which the worker is starting (``browser``), while the goal pre-flight
        runs."""
        ...

    async def wait_died(self) -> BaseException:
        """Completes with the error when an essential process of the run's browser stack dies."""
        ...

    async def run_turn(self, task: str) -> TurnOutcome: ...

    async def salvage(self) -> Salvage: ...

    def live_slot(self) -> LiveSlot | None:
        """The slot whose display shows this run's browser, while it is up."""
        ...

    async def save_profile(self) -> None:
        """Merge the run's profile back for good while the browser is still up (spec §9.3); a no-op without a
        profile, and idempotent. ``close`` does it too if nobody did; the worker calls it first so the session's
        status never says the run ended before its profile is saved."""
        ...

    async def close(self) -> None: ...

    # -- a person takes over (spec §21.5) ----------------------------------------------------------------------
    on_human_needed: Callable[[str], Awaitable[None]] | None
    """Called (on the API loop) when the agent asks for a person with ``wait_for_human``."""

    async def pause(self) -> None:
        """Ask the agent to stop at its next safe point; returns at once."""
        ...

    async def wait_paused(self) -> None:
        """Returns once no agent step runs any more."""
        ...

    async def resume(self, note: str) -> None:
        """Let the agent go on; its next step sees the full state and ``note``."""
        ...


class ControlHooks(Protocol):
    """What a worker tells the browser control API (spec §20.3), implemented by ``sessions.control``."""

    async def hand_back(self, session_id: SessionId, task: str) -> str:
        """Wait for a control call in flight, then return ``task`` with a note of what was done by hand."""
        ...

    async def handed_back(self, session_id: SessionId) -> list[str]:
        """Wait for a control call in flight, then take the list of what was done by hand since last asked."""
        ...

    async def browser_closing(self, target_id: str) -> None:
        """Detach the control engine before the browser goes away."""
        ...


class TakeoverHooks(Protocol):
    """Takeover links of the live view (spec §21.5): open while a session is paused, closed at the resume."""

    def open(self, target_id: str) -> str:
        """A fresh takeover token for ``target_id`` (an older one stops working)."""
        ...

    def close(self, target_id: str) -> None: ...

    def last_input(self, target_id: str) -> float | None:
        """When input last came through the takeover link (``time.monotonic``), or None."""
        ...

    def forget(self, target_id: str) -> None:
        """The browser is gone: drop everything kept for it."""
        ...


class NoTakeovers:
    """Workers built without a live view (unit tests): a pause gives no takeover link."""

    def open(self, target_id: str) -> str:  # noqa: ARG002
        return ""

    def close(self, target_id: str) -> None:  # noqa: ARG002
        return None

    def last_input(self, target_id: str) -> float | None:  # noqa: ARG002
        return None

    def forget(self, target_id: str) -> None:  # noqa: ARG002
        return None


class NoControl:
    """Workers built without the control API (unit tests): nothing is ever driven by hand."""

    async def hand_back(self, session_id: SessionId, task: str) -> str:  # noqa: ARG002
        return task

    async def handed_back(self, session_id: SessionId) -> list[str]:  # noqa: ARG002
        return []

    async def browser_closing(self, target_id: str) -> None:  # noqa: ARG002
        return None


TURN_HISTORY = 20

EngineFactory = Callable[[SessionRecord], Awaitable[Engine]]


class EngineLoader:
    """Makes engines. browser-use and the provider SDKs take about a second to import; entering the loader
    imports them in a worker thread and returns when done, so the server reports ready only with the engine
    loaded and the first run after a start waits for nothing a later run does not (the pool's spare browser
    starts meanwhile). See "Start-up" in docs/architecture.md.

    Engines run on the API's event loop (issue 24: engine threads did not pay for themselves).
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
        self._loading = asyncio.create_task(_import_engine(self._settings), name="engine-import")
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


def _prepare_engine() -> None:
    """Once, off the loop: the patches that take per-step CPU work off the loop (the screenshot resize, the
    action models rebuilt every step), and the TLS contexts the first session's clients would otherwise build on
    it (tens of ms of CPU each)."""
    from openbrowse.llm.tls import shared_ssl_context
    from openbrowse.upstream.action_models import keep_unchanged_action_models
    from openbrowse.upstream.screenshot_resize import resize_off_loop

    resize_off_loop()
    keep_unchanged_action_models()
    build_shared_context()
    with contextlib.suppress(ImportError):  # the providers' HTTP library, absent without provider SDKs
        shared_ssl_context()


async def _import_engine(settings: Settings) -> Any:
    share_httpx_default_context()
    module = await asyncio.to_thread(importlib.import_module, ENGINE_MODULE)
    await asyncio.to_thread(_prepare_engine)
    # the provider SDKs load with their adapters, only for the providers this server has keys for
    for name in provider_modules(settings):
        await asyncio.to_thread(importlib.import_module, name)
    # browser-use runs a full gc.collect() on the event loop when an agent closes; with the hundreds of
    # thousands of objects its import leaves, that stalled every request for hundreds of ms. Frozen objects
    # are never scanned again.
    gc.freeze()
    return module


class WorkerRuntime:
    """Shared services for workers, built by the app. A worker changes its session's status only through the
    :class:`~openbrowse.sessions.status_port.StatusPort` its manager hands it."""

    def __init__(
        self,
        settings: Settings,
        sessions: SessionRepo,
        feed: FeedRepo,
        pool: SlotProvider,
        make_engine: EngineFactory,
        policy: RunPolicy,
        *,
        takeovers: TakeoverHooks | None = None,
        queue_position: Callable[[str], int | None] | None = None,
    ) -> None:
        self.settings = settings
        self.sessions = sessions
        self.feed = feed
        self.pool = pool
        self.make_engine = make_engine
        self.policy = policy
        # the control API is built on the manager, which is built on this runtime: the app sets it once it exists
        self.control: ControlHooks = NoControl()
        self.takeovers: TakeoverHooks = takeovers if takeovers is not None else NoTakeovers()  # the live view's
        self.queue_position: Callable[[str], int | None] = (
            queue_position if queue_position is not None else lambda _owner: None  # the pool's FIFO place (1 = next)
        )
        self.turn_seconds: deque[float] = deque(maxlen=TURN_HISTORY)
        """How long recent turns took: what a queued session's ``etaSeconds`` is estimated from."""
