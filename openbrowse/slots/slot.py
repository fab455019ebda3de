"""Slot: one display slot's processes (Xvfb, x11vnc, websockify, Chromium) brought up and torn down as a unit.

Start order, chosen so the start costs about as much as the slowest process and no more:

* t=0: resolve the browser binary and the sandbox mode (both fail before anything is spawned), wipe the slot's
  directories, bring up its sandbox, relays and egress enforcer (:mod:`.confinement`, about 20 ms), spawn Xvfb
  and websockify (websockify needs no X server and is the slowest to boot);
* Xvfb ready (``-displayfd``): spawn x11vnc and Chromium;
* wait for the sandbox's CDP relay (it boots meanwhile), Chromium's ``/json/version`` (30 s), the single active
  tab, then the VNC and noVNC ports.

Readiness is always a real probe, never a sleep. If anything fails, everything already spawned is torn down
(shielded) before the error propagates, and the slot can be started again.

The live view is lazy: a slot leased from the pool starts Xvfb and Chromium only; :meth:`Slot.add_viewer` starts
x11vnc and websockify for the first viewer, and :meth:`Slot.remove_viewer` of the last one stops them after
``vnc_idle_grace`` seconds (see :mod:`openbrowse.slots.viewers`).

:attr:`Slot.died` resolves with a :class:`ProcessDied` naming the child when an *essential* child (Xvfb or
Chromium) exits while the slot is running. x11vnc and websockify are not essential: :meth:`ensure_vnc`
restarts them. :meth:`stop` tears down in reverse order (Chromium with TERM then KILL after 5 s, websockify,
x11vnc, Xvfb), kills anything still carrying the slot's environment tag (Chromium's crashpad handlers run in
their own process groups) and hands the slot's directory to a background janitor (:mod:`.slot_files`).
"""

from __future__ import annotations

import asyncio
import logging
import shutil
from collections.abc import Awaitable, Callable, Sequence
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING

from openbrowse.errors import ProcessDied, ResourceLimitExceeded
from openbrowse.shielding import run_shielded
from openbrowse.slots.chromium import BrowserProcess, find_browser_binary, prepare_fresh_dir
from openbrowse.slots.confinement import SlotConfinement
from openbrowse.slots.display import DisplayStack
from openbrowse.slots.foreign import SlotBlocked, describe_blockers
from openbrowse.slots.layout import SCREEN_HEIGHT, SCREEN_WIDTH, SlotLayout
from openbrowse.slots.ledger import TAG_ENV, kill_tagged, slot_tag
from openbrowse.slots.process import ManagedProcess
from openbrowse.slots.script_host import ScriptHost, host_environment
from openbrowse.slots.slot_files import DirectoryJanitor, child_environment, scratch_dir
from openbrowse.slots.sysv_shm import KilledCreators, remove_orphan_segments
from openbrowse.slots.viewers import LiveViewers
from openbrowse.slots.vnc_access import vnc_socket_dir

if TYPE_CHECKING:
    from types import TracebackType

    from openbrowse.config import Settings
    from openbrowse.slots.ledger import Ledger

__all__ = ["START_STAGES", "Slot", "SlotState", "StageHook"]

logger = logging.getLogger(__name__)

ESSENTIAL = frozenset({"Xvfb", "Chromium"})

# The points of a start at which ``on_stage`` is awaited, in order (x11vnc only when the live view starts too).
START_STAGES = ("xvfb-spawned", "xvfb-ready", "x11vnc-spawned", "chromium-spawned", "chromium-ready")
StageHook = Callable[[str], Awaitable[None]]


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
        """``on_stage`` is awaited at each of :data:`START_STAGES` (tests use it to cancel a start right there).
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
        self._display: DisplayStack | None = None
        self._browser: BrowserProcess | None = None
        self._died: asyncio.Future[ProcessDied] | None = None
        self._view_only = True
        self._janitor = DirectoryJanitor(f"slot-{index}")
        self._live = LiveViewers(f"slot-{index}", self._stop_vnc_if_idle)
        self._killed = KilledCreators()
        self._script_host: ScriptHost | None = None
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
        if self._display is None:
            raise RuntimeError(f"slot {self.index} is not running")
        return self._display.ws_url

    @property
    def cdp_port(self) -> int:
        return self.layout.cdp_port

    @property
    def cdp_url(self) -> str:
        """``http://127.0.0.1:<cdp port>`` (what ``BrowserSession(cdp_url=…)`` takes)."""
        return self.layout.cdp_url

    @property
    def cdp_ws_url(self) -> str:
        """The browser WebSocket URL from ``/json/version`` of the running Chromium."""
        if self._browser is None or self._state is not SlotState.RUNNING:
            raise RuntimeError(f"slot {self.index} is not running")
        return self._browser.ws_url

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
        if self._state is not SlotState.RUNNING:
            return None
        if self._script_host is None:
            self._script_host = ScriptHost(
                f"slot-{self.index}-scripts",
                self.confinement.command,
                self.confinement.environment(host_environment({TAG_ENV: self.tag})),
                self.temp_dir,
                self.confinement.owner_uid,
                self.cdp_port,
                on_death=self.confinement.check_limits_now,
            )
        return self._script_host

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
        return self._display.view_only if self._display is not None else self._view_only

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
        found: list[ManagedProcess | None] = []
        if self._browser is not None:
            found.append(self._browser.process)
        if self._display is not None:
            found += [self._display.websockify, self._display.x11vnc, self._display.xvfb]
        return [p for p in found if p is not None]

    # -- hooks ----------------------------------------------------------------------------------------------
    def _on_spawn(self, process: ManagedProcess) -> None:
        if self._ledger is not None:
            self._ledger.record(process, kind=process.name, slot=self.index)

    def _on_exit(self, process: ManagedProcess) -> None:
        if self._ledger is not None:
            self._ledger.forget(process.pid)
        if process.returncode is not None and process.returncode < 0:  # killed: x11vnc leaves its SysV shm
            self._killed.killed(process.pid, process.started_at)
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
        env = child_environment(self.tag)
        if self._ledger is not None:
            self._ledger.add_dir(self.directory)
        # the sandbox binds the fresh dirs (and hands them to its uid), so they come first
        await asyncio.to_thread(prepare_fresh_dir, self.directory)
        await asyncio.to_thread(prepare_fresh_dir, self.temp_dir)
        for folder in (self.downloads_dir, self.uploads_dir):
            folder.mkdir()
        await self.confinement.start(self._on_spawn, self._on_exit, self._on_limit, browser_dir=binary.path.parent)
        confined = self.confinement.display_confinement()
        self._display = DisplayStack(
            self.layout,
            novnc_web_dir=self.settings.NOVNC_WEB_DIR,
            env=self.confinement.environment(env),
            socket_dir=self.temp_dir if confined else vnc_socket_dir(self.settings.run_dir),
            view_only=self._view_only,
            on_spawn=self._on_spawn,
            on_exit=self._on_exit,
            confinement=confined,
        )
        # Chromium leaves org.chromium.* scratch dirs in TMPDIR when it is killed: keep them in the slot dir.
        browser_env = {**env, "XDG_CONFIG_HOME": str(self.directory / "config"), "TMPDIR": str(self.temp_dir)}
        self._browser = BrowserProcess(
            binary,
            display=self.layout.display,
            cdp_port=self.layout.cdp_port,
            user_data_dir=self.user_data_dir,
            env=self.confinement.environment(browser_env),
            light=self.settings.CHROME_LIGHT_FLAGS,
            window_size=window_size,
            on_spawn=self._on_spawn,
            on_exit=self._on_exit,
            wrap=confined.wrap if confined is not None else None,
            owner_uid=confined.uid if confined is not None else None,
            extra_args=[*self.confinement.browser_flags(), *self.browser_args],
        )
        self._display.spawn_xvfb()
        if vnc:
            self._display.spawn_websockify()
        await self._stage("xvfb-spawned")
        await self._display.wait_xvfb()
        await self._stage("xvfb-ready")
        if vnc:
            self._display.spawn_x11vnc()
            await self._stage("x11vnc-spawned")
        self._browser.spawn()
        await self._stage("chromium-spawned")
        await self.confinement.wait_relays()
        await self._browser.wait_ready()
        await self._stage("chromium-ready")
        if vnc:
            await self._display.wait_vnc()
        self._state = SlotState.RUNNING
        self.confinement.watch_limits()
        for process in (self._display.xvfb, self._browser.process):
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
        if self._display is None or self._state is not SlotState.RUNNING:
            raise RuntimeError(f"slot {self.index} is not running")
        await self._display.ensure_vnc()

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
            display = self._display
            if self._live.count or display is None or self._state is not SlotState.RUNNING:
                return
            if display.vnc_started:
                await display.stop_live_view()
                logger.info("Slot %d: live view stopped, nobody is watching", self.index)

    async def set_view_only(self, view_only: bool) -> None:
        """Let viewers only watch (default) or also control the browser; kept across live-view restarts."""
        self._view_only = view_only
        if self._display is not None:
            await self._display.set_view_only(view_only)

    # -- stop -----------------------------------------------------------------------------------------------
    async def _teardown(self) -> None:
        """Reverse order: Chromium, websockify, x11vnc, Xvfb; then tagged leftovers and the profile dir.

        Each step runs even if an earlier one failed, so one misbehaving child never strands the others.
        """
        if self._state is SlotState.STOPPED and self._display is None and self._browser is None:
            return
        self._state = SlotState.STOPPING
        loop = asyncio.get_running_loop()
        started = loop.time()
        await self._live.reset()
        try:
            script_host, self._script_host = self._script_host, None
            steps: tuple[ScriptHost | BrowserProcess | DisplayStack | SlotConfinement | None, ...] = (
                script_host,
                self._browser,
                self._display,
                self.confinement,
            )
            if self.confinement.sandbox is not None:
                # Ending the sandbox's namespace first ends everything in it at once (~0.1 s); closing Chromium
                # first instead leaves its own sandboxed children exiting one by one for over a second.
                for process in self._sandboxed_processes(script_host):
                    process.expect_exit()
                steps = (self.confinement, script_host, self._browser, self._display)
            for step in steps:
                if step is None:
                    continue
                try:
                    await step.aclose()
                except Exception:
                    logger.exception("Slot %d: stopping %s failed", self.index, type(step).__name__)
            try:
                leftovers = await asyncio.to_thread(kill_tagged, self.tag)
            except Exception:
                logger.exception("Slot %d: sweeping tagged leftovers failed", self.index)
            else:
                if leftovers:
                    logger.debug("Slot %d: killed leftover helpers %s", self.index, leftovers)
            if killed := self._killed.take():  # Xvfb is gone: nothing holds their segments any more
                await asyncio.to_thread(remove_orphan_segments, killed)
            await asyncio.to_thread(shutil.rmtree, self.temp_dir, True)
            self._janitor.discard(self.directory)
            if self._ledger is not None:
                self._ledger.remove_dir(self.directory)
        finally:
            self._browser = None
            self._display = None
            self._state = SlotState.STOPPED
            logger.info("Slot %d stopped in %.3f s", self.index, loop.time() - started)

    def _sandboxed_processes(self, script_host: ScriptHost | None) -> list[ManagedProcess]:
        found = self.processes() + (self._display.relays if self._display is not None else [])
        if script_host is not None and script_host.process is not None:
            found.append(script_host.process)
        return found

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
        await self._janitor.aclose()

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
