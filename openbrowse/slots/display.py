"""The display stack of one slot: Xvfb, and the live-view pair x11vnc + websockify.

* Xvfb ``:N -screen 0 1920x1080x24 -nolisten tcp -extension GLX -displayfd <fd>``: readiness is exact (Xvfb writes the
  display number to the pipe once it accepts clients), no socket polling.
* x11vnc ``-display :N -unixsock <dir>/<i>.sock -rfbport 0 -rfbportv6 -1 -nopw -forever -shared -noxdamage
  -quiet``, plus ``-viewonly`` unless the caller has taken control (:meth:`DisplayStack.set_view_only`). No TCP port.
* websockify ``--web <NOVNC_WEB_DIR> --token-plugin TokenFile --token-source <dir>/<i>.tokens
  127.0.0.1:<novnc>``: it only bridges a client that presents the slot's secret (see
  :mod:`openbrowse.slots.vnc_access`; :attr:`DisplayStack.ws_url` carries it). It does not need the X server,
  so it may be spawned at the same time as Xvfb (:meth:`start_websockify`); it is the slowest of the three.

x11vnc and websockify are not essential to a running browser: if either dies, :meth:`ensure_vnc` (idempotent,
lock-guarded) starts it again. View-only mode is switched at run time through x11vnc's remote-control
channel (``x11vnc -display :N -sync -remote viewonly|noviewonly``), which applies to connected viewers too.
"""

from __future__ import annotations

import asyncio
import logging
import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from openbrowse.errors import ProcessStartError
from openbrowse.slots.gate import LoopbackGate
from openbrowse.slots.layout import SCREEN_DEPTH, SCREEN_HEIGHT, SCREEN_WIDTH, SlotLayout
from openbrowse.slots.probes import DisplayFdProbe, LiveViewProbe
from openbrowse.slots.process import ManagedProcess, ProcessHook
from openbrowse.slots.vnc_access import VncAccess
from openbrowse.slots.x_files import remove_dead_x_files

if TYPE_CHECKING:
    from collections.abc import Mapping

    from openbrowse.slots.netns import SlotNetwork
    from openbrowse.slots.seam import SeamDir

__all__ = ["Confinement", "DisplayStack"]

logger = logging.getLogger(__name__)

XVFB_READY_TIMEOUT = 10.0


@dataclass(frozen=True, slots=True)
class Confinement:
    """How a sandboxed slot's display processes run: ``wrap`` enters the sandbox; x11vnc's socket goes in the
    slot-writable ``socket_dir``, the token file in the read-only ``seam``; ``network`` reaches websockify."""

    wrap: Callable[[list[str]], list[str]]
    socket_dir: Path
    uid: int
    seam: SeamDir
    network: SlotNetwork


VNC_READY_TIMEOUT = 10.0
REMOTE_TIMEOUT = 5.0


class DisplayStack:
    """Xvfb + x11vnc + websockify for one :class:`SlotLayout`. Stop with :meth:`aclose` (reverse order)."""

    def __init__(
        self,
        layout: SlotLayout,
        *,
        novnc_web_dir: Path | None,
        env: Mapping[str, str],
        socket_dir: Path,
        view_only: bool = True,
        screen: tuple[int, int, int] = (SCREEN_WIDTH, SCREEN_HEIGHT, SCREEN_DEPTH),
        on_spawn: ProcessHook | None = None,
        on_exit: ProcessHook | None = None,
        confinement: Confinement | None = None,
    ) -> None:
        self.layout = layout
        self.novnc_web_dir = novnc_web_dir
        self.env = dict(env)
        self.screen = screen
        self.confinement = confinement
        self.access = VncAccess(socket_dir, layout.index, None if confinement is None else confinement.seam)
        self._gate: LoopbackGate | None = None
        self._view_only = view_only
        self._on_spawn = on_spawn
        self._on_exit = on_exit
        self.xvfb: ManagedProcess | None = None
        self.x11vnc: ManagedProcess | None = None
        self.websockify: ManagedProcess | None = None
        self._xvfb_probe: DisplayFdProbe | None = None
        self._vnc_lock = asyncio.Lock()
        self._vnc_proven = False
        """True once the running x11vnc/websockify pair answered its readiness probes."""

    @property
    def view_only(self) -> bool:
        return self._view_only

    @property
    def ws_url(self) -> str:
        """websockify's WebSocket URL with the slot's secret: the only way in to the VNC stream."""
        return f"ws://127.0.0.1:{self.layout.novnc_port}/websockify?token={self.access.secret}"

    @property
    def vnc_running(self) -> bool:
        return bool(self.x11vnc and self.x11vnc.running and self.websockify and self.websockify.running)

    def _process(self, name: str, argv: list[str], *, pass_fds: tuple[int, ...] = ()) -> ManagedProcess:
        return ManagedProcess(
            name,
            argv if self.confinement is None else self.confinement.wrap(argv),
            env=self.env,
            pass_fds=pass_fds,
            terminate_grace=3.0,
            on_spawn=self._on_spawn,
            on_exit=self._on_exit,
        )

    # -- Xvfb -----------------------------------------------------------------------------------------------
    def spawn_xvfb(self) -> ManagedProcess:
        width, height, depth = self.screen
        read_fd, write_fd = os.pipe()
        argv = [
            "Xvfb",
            self.layout.display,
            "-screen",
            "0",
            f"{width}x{height}x{depth}",
            "-nolisten",
            "tcp",
            # No GLX: Chromium draws without it here (no GPU), and Xvfb then never loads Mesa (-18 MiB PSS).
            "-extension",
            "GLX",
            "-displayfd",
            str(write_fd),
        ]
        process = self._process("Xvfb", argv, pass_fds=(write_fd,))
        try:
            process.start()
        except BaseException:
            os.close(read_fd)
            raise
        finally:
            os.close(write_fd)
        self.xvfb = process
        self._xvfb_probe = DisplayFdProbe(read_fd)
        return process

    async def wait_xvfb(self, within: float = XVFB_READY_TIMEOUT) -> None:
        assert self.xvfb is not None
        assert self._xvfb_probe is not None
        try:
            await self.xvfb.wait_ready(self._xvfb_probe, within=within)
        finally:
            self._xvfb_probe.close()

    # -- live view ------------------------------------------------------------------------------------------
    def _x11vnc_argv(self) -> list[str]:
        argv = ["x11vnc", "-display", self.layout.display, "-unixsock", str(self.access.socket_path)]
        # No TCP at all: -rfbport 0 alone still listens on [::]:5900, and -localhost refuses Unix-socket clients
        argv += ["-rfbport", "0", "-rfbportv6", "-1", "-nopw", "-forever", "-shared", "-noxdamage", "-quiet", "-noipv6"]
        if self._view_only:
            argv.append("-viewonly")
        return argv

    def _websockify_argv(self) -> list[str]:
        argv = [shutil.which("websockify") or "websockify"]
        if self.novnc_web_dir is not None and self.novnc_web_dir.is_dir():
            argv += ["--web", str(self.novnc_web_dir)]
        elif self.novnc_web_dir is not None:
            logger.warning("NOVNC_WEB_DIR %s does not exist; websockify serves no web files", self.novnc_web_dir)
        argv += ["--token-plugin", "TokenFile", "--token-source", str(self.access.token_path)]
        argv.append(f"127.0.0.1:{self.layout.novnc_port}")
        return argv

    async def start_websockify(self) -> ManagedProcess | None:
        """Write the token file (in a thread) and spawn websockify unless it is running; return the new process
        (None if nothing was spawned). In a sandbox, open the host-side gate to its port as well."""
        if self.websockify is not None and self.websockify.running:
            return None
        await asyncio.to_thread(self.access.write_token_file)
        self.websockify = self._process("websockify", self._websockify_argv())
        self.websockify.start()
        self._open_gate()
        return self.websockify

    def _open_gate(self) -> None:
        """In a sandbox, websockify's port lives in the slot's namespace: our gate puts it on the same host port,
        for the server's own uid only (see :mod:`.gate`)."""
        if self.confinement is None or self._gate is not None:
            return
        gate = LoopbackGate(f"slot-{self.layout.index} noVNC gate", self.layout.novnc_port, self.confinement.network)
        gate.open()
        self._gate = gate

    async def start_x11vnc(self) -> ManagedProcess | None:
        """Spawn x11vnc unless it is running (Xvfb must be ready); return the new process or None."""
        if self.x11vnc is not None and self.x11vnc.running:
            return None
        await asyncio.to_thread(self.access.clear_socket)
        self.x11vnc = self._process("x11vnc", self._x11vnc_argv())
        self.x11vnc.start()
        return self.x11vnc

    async def wait_vnc(self, within: float = VNC_READY_TIMEOUT) -> None:
        assert self.x11vnc is not None
        assert self.websockify is not None
        network = None if self.confinement is None else self.confinement.network
        probe = LiveViewProbe(self.layout.novnc_port, self.access.secret, network)
        await self.websockify.wait_ready(probe, within=within)
        if not self.x11vnc.running:
            raise ProcessStartError(f"x11vnc on {self.layout.display} exited", stderr_tail=self.x11vnc.output_tail())

    async def ensure_vnc(self, within: float = VNC_READY_TIMEOUT) -> None:
        """Make sure x11vnc and websockify run and accept connections; (re)start whichever is missing."""
        if self.xvfb is None or not self.xvfb.running:
            raise ProcessStartError(f"Cannot start the live view of display {self.layout.display}: Xvfb is not running")
        async with self._vnc_lock:
            stale = [p for p in (self.x11vnc, self.websockify) if p is not None and not p.running]
            for process in stale:
                await process.aclose()  # reap leftovers of a crashed one (already dead; just releases its fds)
            spawned = [await self.start_websockify(), await self.start_x11vnc()]
            if any(spawned) or not self._vnc_proven:
                # Only a new pair is probed: the x11vnc probe is a VNC client connection, which x11vnc serves
                # one at a time (about 0.1 s each); probing on every viewer or asset fetch queued the real
                # viewer behind dozens of them (4 s to the first frame of the live page).
                self._vnc_proven = False
                await self.wait_vnc(within)
                self._vnc_proven = True

    async def set_view_only(self, view_only: bool) -> None:
        """Switch x11vnc between view-only and interactive (applies to connected viewers as well)."""
        async with self._vnc_lock:
            self._view_only = view_only
            if self.x11vnc is None or not self.x11vnc.running:
                return  # the next start uses the new mode
            command = "viewonly" if view_only else "noviewonly"
            await self._remote(command)
            logger.info(
                "Display %s live view is now %s", self.layout.display, "view-only" if view_only else "interactive"
            )

    async def _remote(self, command: str) -> None:
        """Send ``x11vnc -remote <command>`` and wait for its ack. Retried for a few seconds, because a fresh
        x11vnc opens its RFB port before it answers on its remote-control X property."""
        argv = ["x11vnc", "-display", self.layout.display, "-sync", "-remote", command]
        if self.confinement is not None:
            argv = self.confinement.wrap(argv)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + REMOTE_TIMEOUT
        delay = 0.05
        while True:
            process = ManagedProcess(
                f"x11vnc -remote {command}", argv, env=self.env, terminate_grace=1.0, expect_exit=True
            )
            async with process:
                done, _ = await asyncio.wait({process.died}, timeout=max(deadline - loop.time(), 0.1))
            if done and process.returncode == 0:
                return
            if loop.time() + delay >= deadline:
                raise ProcessStartError(
                    f"x11vnc on {self.layout.display} did not accept '-remote {command}'",
                    stderr_tail=process.output_tail(),
                )
            await asyncio.sleep(delay)
            delay = min(delay * 2, 0.5)

    @property
    def vnc_started(self) -> bool:
        return any(p is not None and p.running for p in (self.x11vnc, self.websockify))

    async def stop_live_view(self) -> None:
        """Stop x11vnc and websockify (nobody watches); :meth:`ensure_vnc` starts them again."""
        async with self._vnc_lock:
            await self.stop_vnc()

    async def stop_vnc(self) -> None:
        self._vnc_proven = False
        gate, self._gate = self._gate, None
        if gate is not None:
            await gate.aclose()
        for process in (self.websockify, self.x11vnc):
            if process is not None:
                await process.aclose()
        await asyncio.to_thread(self.access.remove)

    async def aclose(self) -> None:
        """Stop websockify, x11vnc, then Xvfb (each shielded); remove the X files a SIGKILLed Xvfb left."""
        await self.stop_vnc()
        if self.xvfb is not None:
            await self.xvfb.aclose()
            if self.xvfb.started:
                remove_dead_x_files(self.layout, self.xvfb.pid)
        if self._xvfb_probe is not None:
            self._xvfb_probe.close()
