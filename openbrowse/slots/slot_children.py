"""SlotChildren: the processes of one start of a slot (Xvfb, x11vnc, websockify, Chromium, the script host).

Start order, chosen so the start costs about as much as the slowest process and no more:

* t=0 (the slot, before building these): resolve the browser binary and the sandbox mode (both fail before
  anything is spawned), wipe the slot's directories, bring up its sandbox, seam dir, egress enforcer and relay
  (:mod:`.confinement`, about 20 ms); then spawn Xvfb and websockify (websockify needs no X server and is the
  slowest to boot);
* Xvfb ready (``-displayfd``): spawn x11vnc and Chromium;
* wait for Chromium's ``/json/version`` (30 s; inside the sandbox's namespace, and kept: the CDP gate serves this
  pinned copy), the single active tab, open the host-side CDP gate, then wait for the live view.

Readiness is always a real probe, never a sleep. The script host starts on first use.

The :class:`~openbrowse.slots.slot.Slot` owns one ``SlotChildren`` per start and closes it from its shielded
teardown, also after a failed start; the sandbox (``SlotConfinement``) lives as long as the slot, and the slot
starts and closes it around these.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from openbrowse.slots.browser_looks import browser_looks
from openbrowse.slots.chromium import BrowserBinary, BrowserProcess
from openbrowse.slots.confinement import SlotConfinement
from openbrowse.slots.display import DisplayStack
from openbrowse.slots.layout import SlotLayout
from openbrowse.slots.ledger import TAG_ENV
from openbrowse.slots.process import ManagedProcess, ProcessHook
from openbrowse.slots.script_host import CommandWrapper, ScriptHost, host_environment, identity
from openbrowse.slots.slot_disk import disk_cache_flags
from openbrowse.slots.vnc_access import vnc_socket_dir

if TYPE_CHECKING:
    from openbrowse.config import Settings

__all__ = ["START_STAGES", "SlotChildren", "StageHook"]

logger = logging.getLogger(__name__)

# The points of a start at which ``on_stage`` is awaited, in order (x11vnc only when the live view starts too).
START_STAGES = ("xvfb-spawned", "xvfb-ready", "x11vnc-spawned", "chromium-spawned", "chromium-ready")
StageHook = Callable[[str], Awaitable[None]]


class SlotChildren:
    """A slot's display stack, browser and script host for one start; built before anything spawns, closed in
    reverse. ``confinement`` is the slot's sandbox, which the script host enters (the slot owns and closes it)."""

    def __init__(
        self,
        display: DisplayStack,
        browser: BrowserProcess,
        *,
        index: int,
        confinement: SlotConfinement,
        tag: str,
        temp_dir: Path,
        script_uid: int,
    ) -> None:
        """``script_uid`` is the script host's own uid (``Settings.script_uid``), never the browser's."""
        self.display = display
        self.browser = browser
        self.index = index
        self._confinement = confinement
        self._tag = tag
        self._temp_dir = temp_dir
        self._script_uid = script_uid
        self._script_host: ScriptHost | None = None

    @classmethod
    def build(
        cls,
        settings: Settings,
        layout: SlotLayout,
        confinement: SlotConfinement,
        binary: BrowserBinary,
        *,
        env: dict[str, str],
        tag: str,
        directory: Path,
        user_data_dir: Path,
        temp_dir: Path,
        view_only: bool,
        window_size: tuple[int, int],
        browser_args: Sequence[str],
        on_spawn: ProcessHook,
        on_exit: ProcessHook,
    ) -> SlotChildren:
        """The children of a slot whose sandbox already runs (``confinement.start``); ``env`` is what they inherit."""
        confined = confinement.display_confinement()
        display = DisplayStack(
            layout,
            novnc_web_dir=settings.NOVNC_WEB_DIR,
            env=confinement.environment(env),
            socket_dir=temp_dir if confined else vnc_socket_dir(settings.run_dir),
            view_only=view_only,
            on_spawn=on_spawn,
            on_exit=on_exit,
            confinement=confined,
        )
        looks = browser_looks(settings)  # language, time zone, WebGL, webdriver (spec §28.2)
        # Chromium leaves org.chromium.* scratch dirs in TMPDIR when it is killed: keep them in the slot dir.
        browser_env = {
            **env,
            **looks.environment(),
            "XDG_CONFIG_HOME": str(directory / "config"),
            "TMPDIR": str(temp_dir),
        }
        browser = BrowserProcess(
            binary,
            display=layout.display,
            cdp_port=layout.cdp_port,
            user_data_dir=user_data_dir,
            env=confinement.environment(browser_env),
            light=settings.CHROME_LIGHT_FLAGS,
            window_size=window_size,
            on_spawn=on_spawn,
            on_exit=on_exit,
            wrap=confined.wrap if confined is not None else None,
            owner_uid=confined.uid if confined is not None else None,
            network=confined.network if confined is not None else None,
            extra_args=[
                *confinement.browser_flags(),
                *disk_cache_flags(settings.SLOT_DISK_MB),
                *looks.flags(software_gl=not settings.CHROME_LIGHT_FLAGS),
                *browser_args,
            ],
        )
        return cls(
            display,
            browser,
            index=layout.index,
            confinement=confinement,
            tag=tag,
            temp_dir=temp_dir,
            script_uid=settings.script_uid(layout.index),
        )

    async def bring_up(self, confinement: SlotConfinement, *, vnc: bool, stage: StageHook) -> None:
        """Spawn and wait for each child in start order, awaiting ``stage`` at each of :data:`START_STAGES`."""
        self.display.spawn_xvfb()
        if vnc:
            await self.display.start_websockify()
        await stage("xvfb-spawned")
        await self.display.wait_xvfb()
        await stage("xvfb-ready")
        if vnc:
            await self.display.start_x11vnc()
            await stage("x11vnc-spawned")
        self.browser.spawn()
        await stage("chromium-spawned")
        await self.browser.wait_ready()
        assert self.browser.version is not None
        confinement.open_cdp_gate(self.browser.version)
        await stage("chromium-ready")
        if vnc:
            await self.display.wait_vnc()

    def script_host(self) -> ScriptHost:
        """The ``run_code_file`` process host (spec §11.3), in the sandbox under its own uid and network namespace;
        made on first use. Its CDP goes through the page filter to Chromium's pinned endpoint."""
        if self._script_host is None:
            sandbox = self._confinement.sandbox
            env = host_environment({TAG_ENV: self._tag})
            if sandbox is not None:
                uid = self._script_uid
                wrap: CommandWrapper = lambda argv: sandbox.script_command(argv, uid)  # noqa: E731
                env, cwd = sandbox.script_environment(env), Path("/")
            else:
                wrap, cwd = identity, self._temp_dir
            browser = self.browser
            self._script_host = ScriptHost(
                f"slot-{self.index}-scripts",
                wrap,
                env,
                lambda: browser.ws_url,
                cwd=cwd,
                on_death=self._confinement.check_limits_now,
            )
        return self._script_host

    def essential(self) -> tuple[ManagedProcess | None, ...]:
        """Xvfb and Chromium: the children whose exit ends the slot."""
        return self.display.xvfb, self.browser.process

    def processes(self) -> list[ManagedProcess]:
        """The children spawned so far (running or not), in teardown order; leaders of their process groups."""
        found = [self.browser.process, self.display.websockify, self.display.x11vnc, self.display.xvfb]
        return [p for p in found if p is not None]

    def sandboxed_processes(self) -> list[ManagedProcess]:
        """Every child that runs in the slot's sandbox, the script host included."""
        found = self.processes()
        if self._script_host is not None and self._script_host.process is not None:
            found.append(self._script_host.process)
        return found

    async def aclose(self) -> None:
        """The script host, Chromium, then websockify, x11vnc and Xvfb; each closes even if one before it failed."""
        script_host, self._script_host = self._script_host, None
        for child in (script_host, self.browser, self.display):
            if child is None:
                continue
            try:
                await child.aclose()
            except Exception:
                logger.exception("Slot %d: stopping %s failed", self.index, type(child).__name__)
