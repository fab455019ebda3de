"""Slot: one display slot's processes (Xvfb, x11vnc, websockify, Chromium) brought up and torn down as a unit.

The slot owns its sandbox (:mod:`.confinement`) and, per start, a :class:`~.slot_children.SlotChildren` holding
the display stack and the browser (the start order is described there). If anything fails, everything already
spawned is torn down (shielded) before the error propagates, and the slot can be started again.

The live view is lazy: a slot leased from the pool starts Xvfb and Chromium only; :meth:`Slot.add_viewer` starts
x11vnc and websockify for the first viewer, and :meth:`Slot.remove_viewer` of the last one stops them after
``vnc_idle_grace`` seconds (see :mod:`openbrowse.slots.viewers`).

:attr:`Slot.died` resolves with a :class:`ProcessDied` naming the child when an *essential* child (Xvfb or
Chromium) exits while the slot is running. x11vnc and websockify are not essential: :meth:`ensure_vnc`
restarts them. :meth:`stop` tears down in reverse order, then clears what the slot left (:mod:`.slot_traces`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING

from openbrowse.errors import ProcessDied, ResourceLimitExceeded
from openbrowse.shielding import run_shielded
from openbrowse.slots.chromium import find_browser_binary
from openbrowse.slots.confinement import SlotConfinement
from openbrowse.slots.foreign import SlotBlocked, describe_blockers
from openbrowse.slots.layout import SCREEN_HEIGHT, SCREEN_WIDTH, SlotLayout
from openbrowse.slots.ledger import slot_tag
from openbrowse.slots.process import ManagedProcess
from openbrowse.slots.script_host import ScriptHost
from openbrowse.slots.slot_children import SlotChildren, StageHook
from openbrowse.slots.slot_files import child_environment, scratch_dir
from openbrowse.slots.slot_traces import SlotTraces
from openbrowse.slots.viewers import LiveViewers

if TYPE_CHECKING:
    from types import TracebackType

    from openbrowse.config import Settings
    from openbrowse.slots.ledger import Ledger
    from openbrowse.slots.netns import SlotNetwork

__all__ = ["Slot", "SlotState"]

logger = logging.getLogger(__name__)

ESSENTIAL = frozenset({"Xvfb", "Chromium"})


class SlotState(StrEnum):
    STOPPED = "stopped"
    STARTING = "starting"
    RUNNING = "running"
    STOPPING = "stopping"


class Slot:
    """The processes of display slot ``index`` (absolute index: pool base index + local index)."""

    def __init__(
        self,
        settings: Settings,
        index: int,
        *,
        ledger: Ledger | None = None,
        on_stage: StageHook | None = None,
        browser_args: Sequence[str] = (),
    ) -> None:
        """``on_stage`` is awaited at each of :data:`~.slot_children.START_STAGES` (tests cancel a start right there).
        ``browser_args``: Chromium flags of this slot's user alone, after the sandbox's (the MCP shared browser's)."""
        self.settings = settings
        self.browser_args = tuple(browser_args)
        self._on_stage = on_stage
        self.layout = SlotLayout(index)
        self.tag = slot_tag(settings.run_dir, index)
        self.directory: Path = settings.run_dir / "slots" / f"slot-{index}"
        self._ledger = ledger
        self._state = SlotState.STOPPED
        self._lock = asyncio.Lock()
        self._children: SlotChildren | None = None
        self._died: asyncio.Future[ProcessDied] | None = None
        self._view_only = True
        self._traces = SlotTraces(index, self.tag, self.directory, self.temp_dir, ledger)
        self._live = LiveViewers(f"slot-{index}", self._stop_vnc_if_idle)
        self.confinement = SlotConfinement(settings, self.layout, self.directory, self.temp_dir, self.tag)
        """The slot's sandbox, relays and egress enforcer (spec §24); see :mod:`openbrowse.slots.confinement`."""

    # -- addresses ------------------------------------------------------------------------------------------
    @property
    def index(self) -> int:
        return self.layout.index

    @property
    def display(self) -> str:
        return self.layout.display

    @property
    def vnc_port(self) -> int:
        return self.layout.vnc_port

    @property
    def novnc_port(self) -> int:
        return self.layout.novnc_port

    @property
    def novnc_ws_url(self) -> str:
        """websockify's WebSocket URL including the slot's secret (for the server's live-view bridge only)."""
        if self._children is None:
            raise RuntimeError(f"slot {self.index} is not running")
        return self._children.display.ws_url

    @property
    def cdp_port(self) -> int:
        return self.layout.cdp_port

    @property
    def cdp_url(self) -> str:
        """``http://127.0.0.1:<cdp port>`` (what ``BrowserSession(cdp_url=…)`` takes)."""
        return self.layout.cdp_url

    @property
    def network(self) -> SlotNetwork | None:
        """Where Chromium's DevTools port is (None unsandboxed); for the server's checks (clients: :attr:`cdp_url`)."""
        return self.confinement.network

    @property
    def cdp_ws_url(self) -> str:
        """The browser WebSocket URL from ``/json/version`` of the running Chromium, read once at its start."""
        if self._children is None or self._state is not SlotState.RUNNING:
            raise RuntimeError(f"slot {self.index} is not running")
        return self._children.browser.ws_url

    @property
    def user_data_dir(self) -> Path:
        return self.directory / "user-data"

    @property
    def temp_dir(self) -> Path:
        return scratch_dir(self.settings.run_dir, self.index)

    @property
    def downloads_dir(self) -> Path:
        """Where the browser saves downloads (spec §22.2); the same path inside the sandbox and out."""
        return self.directory / "downloads"

    @property
    def uploads_dir(self) -> Path:
        """What the browser may put into a page's file input (spec §24.6); the same path inside and out."""
        return self.directory / "uploads"

    @property
    def script_host(self) -> ScriptHost | None:
        """The slot's ``run_code_file`` process host (spec §11.3), in the sandbox; started on first use, killed with
        the slot. None while the slot is not running."""
        if self._state is not SlotState.RUNNING or self._children is None:
            return None
        return self._children.script_host()

    def check_not_blocked(self) -> None:
        """Raise :class:`SlotBlocked` if a foreign program holds the display or a port (it is never killed)."""
        problem = describe_blockers(self.layout)
        if problem is not None:
            logger.error("%s", problem)
            raise SlotBlocked(problem)

    @property
    def state(self) -> SlotState:
        return self._state

    @property
    def running(self) -> bool:
        return self._state is SlotState.RUNNING and (self._died is None or not self._died.done())

    @property
    def view_only(self) -> bool:
        return self._children.display.view_only if self._children is not None else self._view_only

    @property
    def died(self) -> asyncio.Future[ProcessDied]:
        """Resolves with :class:`ProcessDied` naming the essential child that exited unexpectedly.

        Each access returns a new shielded view; it never resolves for a clean :meth:`stop`.
        """
        if self._died is None:
            raise RuntimeError(f"slot {self.index} was never started")
        return asyncio.shield(self._died)

    async def watch(self) -> ProcessDied:
        """Wait until an essential child dies; return the :class:`ProcessDied` describing it."""
        return await self.died

    def processes(self) -> list[ManagedProcess]:
        """The managed children currently known (running or not), leaders of their process groups."""
        return self._children.processes() if self._children is not None else []

    # -- hooks ----------------------------------------------------------------------------------------------
    def _on_spawn(self, process: ManagedProcess) -> None:
        if self._ledger is not None:
            self._ledger.record(process, kind=process.name, slot=self.index)

    def _on_exit(self, process: ManagedProcess) -> None:
        if self._ledger is not None:
            self._ledger.forget(process.pid)
        self._traces.child_exited(process)
        if process.closing or process.name not in ESSENTIAL:
            return
        if self._state is SlotState.RUNNING and self._died is not None and not self._died.done():
            logger.error("Slot %d: %s died (exit code %s)", self.index, process.name, process.returncode)
            self._died.set_result(ProcessDied(process.name, process.returncode))

    # -- start ----------------------------------------------------------------------------------------------
    async def start(self, *, vnc: bool = True, window_size: tuple[int, int] | None = None) -> None:
        """Bring the slot up. Idempotent while running; a slot whose child died is rebuilt from scratch."""
        async with self._lock:
            if self._state is SlotState.RUNNING and self.running:
                if vnc:
                    await self._ensure_vnc_locked()
                return
            if self._state is not SlotState.STOPPED:
                await run_shielded(self._teardown())
            try:
                await self._start(vnc=vnc, window_size=window_size or (SCREEN_WIDTH, SCREEN_HEIGHT))
            except BaseException:
                await run_shielded(self._teardown())
                raise

    async def _start(self, *, vnc: bool, window_size: tuple[int, int]) -> None:
        loop = asyncio.get_running_loop()
        started = loop.time()
        binary = find_browser_binary(self.settings)  # BrowserUnavailable before anything is spawned
        await self.confinement.decide()  # SandboxUnavailable before anything is spawned
        self.check_not_blocked()
        self._state = SlotState.STARTING
        self._died = loop.create_future()
        cap = (self.settings.SLOT_DISK_MB, self.confinement.uid) if self.confinement.sandboxed else None
        await self._traces.prepare((self.downloads_dir, self.uploads_dir), cap)
        await self.confinement.start(self._on_spawn, self._on_exit, self._on_limit, browser_dir=binary.path.parent)
        children = self._children = SlotChildren.build(
            self.settings,
            self.layout,
            self.confinement,
            binary,
            env=child_environment(self.tag),
            tag=self.tag,
            directory=self.directory,
            user_data_dir=self.user_data_dir,
            temp_dir=self.temp_dir,
            view_only=self._view_only,
            window_size=window_size,
            browser_args=self.browser_args,
            on_spawn=self._on_spawn,
            on_exit=self._on_exit,
        )
        await children.bring_up(self.confinement, vnc=vnc, stage=self._stage)
        self._state = SlotState.RUNNING
        self.confinement.watch_limits()
        for process in children.essential():
            if process is not None and not process.running and not self._died.done():
                self._died.set_result(ProcessDied(process.name, process.returncode))
        logger.info(
            "Slot %d up on %s (CDP %d, noVNC %s) in %.3f s",
            self.index,
            self.display,
            self.cdp_port,
            self.novnc_port if vnc else "off",
            loop.time() - started,
        )

    def _on_limit(self, exceeded: ResourceLimitExceeded) -> None:
        if self._state is SlotState.RUNNING and self._died is not None and not self._died.done():
            logger.error("Slot %d: %s", self.index, exceeded)
            self._died.set_result(exceeded)

    async def _stage(self, name: str) -> None:
        if self._on_stage is not None:
            await self._on_stage(name)

    # -- live view ------------------------------------------------------------------------------------------
    async def ensure_vnc(self) -> None:
        """(Re)start x11vnc and websockify if they are not running. The slot must be running."""
        async with self._lock:
            await self._ensure_vnc_locked()

    async def _ensure_vnc_locked(self) -> None:
        if self._children is None or self._state is not SlotState.RUNNING:
            raise RuntimeError(f"slot {self.index} is not running")
        await self._children.display.ensure_vnc()

    @property
    def viewers(self) -> int:
        return self._live.count

    @property
    def vnc_stop_pending(self) -> bool:
        """True while the live view is due to stop because its last viewer left."""
        return self._live.stop_pending

    @property
    def vnc_idle_grace(self) -> float:
        return self._live.grace

    @vnc_idle_grace.setter
    def vnc_idle_grace(self, seconds: float) -> None:
        self._live.grace = seconds

    async def add_viewer(self) -> int:
        """A live viewer arrives: start the VNC side if needed (spec §4.10 lazy start); return a ticket for
        :meth:`remove_viewer`. On failure nothing is counted."""
        ticket = self._live.arrive()
        try:
            await self.ensure_vnc()
        except BaseException:
            self.remove_viewer(ticket)
            raise
        return ticket

    def remove_viewer(self, ticket: int) -> None:
        """A live viewer left. After the last one, x11vnc and websockify stop once ``vnc_idle_grace`` passed."""
        self._live.leave(ticket, running=self._state is SlotState.RUNNING)

    async def _stop_vnc_if_idle(self) -> None:
        async with self._lock:
            if self._live.count or self._children is None or self._state is not SlotState.RUNNING:
                return
            display = self._children.display
            if display.vnc_started:
                await display.stop_live_view()
                logger.info("Slot %d: live view stopped, nobody is watching", self.index)

    async def set_view_only(self, view_only: bool) -> None:
        """Let viewers only watch (default) or also control the browser; kept across live-view restarts."""
        self._view_only = view_only
        if self._children is not None:
            await self._children.display.set_view_only(view_only)

    # -- stop -----------------------------------------------------------------------------------------------
    async def _teardown(self) -> None:
        """Reverse order: Chromium, websockify, x11vnc, Xvfb; then tagged leftovers and the profile dir.

        Each step runs even if an earlier one failed, so one misbehaving child never strands the others.
        """
        if self._state is SlotState.STOPPED and self._children is None:
            return
        self._state = SlotState.STOPPING
        loop = asyncio.get_running_loop()
        started = loop.time()
        await self._live.reset()
        try:
            children = self._children
            steps: tuple[SlotChildren | SlotConfinement | None, ...] = (children, self.confinement)
            if self.confinement.sandbox is not None:
                # Ending the sandbox's namespace first ends everything in it at once (~0.1 s); closing Chromium
                # first instead leaves its own sandboxed children exiting one by one for over a second.
                for process in children.sandboxed_processes() if children is not None else []:
                    process.expect_exit()
                steps = (self.confinement, children)
            for step in steps:
                if step is None:
                    continue
                try:
                    await step.aclose()
                except Exception:
                    logger.exception("Slot %d: stopping %s failed", self.index, type(step).__name__)
            await self._traces.clear()
        finally:
            self._children = None
            self._state = SlotState.STOPPED
            logger.info("Slot %d stopped in %.3f s", self.index, loop.time() - started)

    async def _locked_teardown(self) -> None:
        async with self._lock:
            await self._teardown()

    async def stop(self) -> None:
        """Tear the processes down (shielded; idempotent); the slot can be started again afterwards.

        The slot directory (profile) is moved aside at once and deleted in the background; use :meth:`aclose`
        to also wait for that.
        """
        await run_shielded(self._locked_teardown())

    async def aclose(self) -> None:
        """:meth:`stop`, then wait until the old profile directories are deleted."""
        await self.stop()
        await self._traces.aclose()

    async def __aenter__(self) -> Slot:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()
