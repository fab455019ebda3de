"""Everything that keeps one slot's untrusted processes in their box (spec §24): the sandbox, its seam directory
(:mod:`.seam`), the handle on its network namespace (:mod:`.netns`) and the host-side CDP gate (:mod:`.gate`), the
egress enforcer and its relay, and the limit watcher, brought up before Xvfb and torn down after it.

:meth:`SlotConfinement.decide` picks the mode once per start: sandboxed when the host allows it (the default),
unsandboxed only when it does not *and* ``ALLOW_UNSANDBOXED=1`` (with a warning, spec §24.2); otherwise the start
fails with :class:`SandboxUnavailable` naming the setting. In both modes Chromium's traffic goes through the egress
enforcer, so the network policy holds for the browser either way; only the sandbox keeps a hostile script or a
compromised browser off the host.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from openbrowse.network.egress import EgressEnforcer
from openbrowse.network.policy import NetworkRules
from openbrowse.network.proxy_route import ProxyRoute
from openbrowse.shielding import run_shielded
from openbrowse.slots.cdp_pin import cdp_screen
from openbrowse.slots.cgroups import CgroupLimits, SlotCgroup
from openbrowse.slots.display import Confinement
from openbrowse.slots.font_cache import shared_font_cache
from openbrowse.slots.forwarders import EGRESS_PROXY_PORT, egress_relay
from openbrowse.slots.gate import LoopbackGate
from openbrowse.slots.ledger import instance_id
from openbrowse.slots.limits import LimitWatcher
from openbrowse.slots.netns import SlotNetwork
from openbrowse.slots.sandbox import SandboxUnavailable, SlotSandbox, sandbox_problem
from openbrowse.slots.seam import SeamDir, seam_dir
from openbrowse.slots.slot_files import child_environment

if TYPE_CHECKING:
    from openbrowse.config import Settings
    from openbrowse.errors import ResourceLimitExceeded
    from openbrowse.slots.layout import SlotLayout
    from openbrowse.slots.process import ManagedProcess, ProcessHook

__all__ = ["SlotConfinement", "report_sandbox", "unsandboxed_warning"]

logger = logging.getLogger(__name__)

_warned = False


def report_sandbox(settings: Settings) -> str | None:
    """Say once at start-up whether slots will be sandboxed; return the reason they cannot be (blocking)."""
    global _warned
    problem = sandbox_problem()
    if problem is None:
        logger.info("Slots run sandboxed: own uid from %d, namespaces, cgroup caps", settings.SANDBOX_UID_BASE)
    elif settings.ALLOW_UNSANDBOXED:
        logger.warning("%s", unsandboxed_warning(problem))
        _warned = True
    else:
        logger.error("The browser sandbox is unavailable (%s): sessions will refuse to start", problem)
    return problem


def unsandboxed_warning(problem: str) -> str:
    return (
        f"Slots run WITHOUT the sandbox because {problem}; ALLOW_UNSANDBOXED=1 is set, so a hostile page or script "
        "can reach this host"
    )


class SlotConfinement:
    """The sandbox side of one :class:`~openbrowse.slots.slot.Slot` (one instance per slot, reused across starts)."""

    def __init__(self, settings: Settings, layout: SlotLayout, directory: Path, socket_dir: Path, tag: str) -> None:
        """``socket_dir`` is the slot's scratch dir (writable by the slot; the server never touches what is in it)."""
        self.settings = settings
        self.layout = layout
        self.directory = directory
        self.socket_dir = socket_dir
        self.tag = tag
        self.uid = settings.SANDBOX_UID_BASE + layout.index
        self.seam = SeamDir(seam_dir(settings.run_dir, layout.index), gid=self.uid)
        self.sandboxed = False
        self.sandbox: SlotSandbox | None = None
        self.network: SlotNetwork | None = None
        """The sandbox's network namespace, opened once at its start (None unsandboxed)."""
        self.egress: EgressEnforcer | None = None
        self.route: ProxyRoute | None = None
        """The holder's upstream proxy (spec §28.1), kept across restarts of the slot until the lease ends."""
        self.relays: list[ManagedProcess] = []
        self._limits: LimitWatcher | None = None
        self._cdp_gate: LoopbackGate | None = None
        self._proxy_port = EGRESS_PROXY_PORT
        self.warning_listeners: list[Callable[[str], None]] = []
        """Called with one sentence when the sandbox hits a cap without ending (the session's feed listens)."""

    # -- mode -----------------------------------------------------------------------------------------------
    async def decide(self) -> bool:
        """True to sandbox this start; raise :class:`SandboxUnavailable` when it cannot be and is not waived."""
        global _warned
        problem = await asyncio.to_thread(sandbox_problem)
        if problem is None:
            self.sandboxed = True
            return True
        if not self.settings.ALLOW_UNSANDBOXED:
            raise SandboxUnavailable(
                f"Sessions cannot start: the browser sandbox is unavailable because {problem}. Run the server as "
                "root on a kernel that allows namespaces, or set ALLOW_UNSANDBOXED=1 to run browsers unsandboxed "
                "(development only)."
            )
        if not _warned:
            logger.warning("%s", unsandboxed_warning(problem))
            _warned = True
        self.sandboxed = False
        return False

    # -- start ----------------------------------------------------------------------------------------------
    async def start(
        self,
        on_spawn: ProcessHook,
        on_exit: ProcessHook,
        on_exceeded: Callable[[ResourceLimitExceeded], None],
        *,
        browser_dir: Path | None = None,
    ) -> None:
        """``browser_dir`` holds the browser binary; outside ``/usr`` it is bound read-only into the sandbox."""
        rules = NetworkRules.from_settings(self.settings)
        codeview = self.settings.codeview_url  # the code tab page is the one thing of ours a slot may load
        self.egress = EgressEnforcer(
            rules, label=f"slot-{self.layout.index}", exempt_urls=[codeview] if codeview else ()
        )
        self.egress.use_route(self.route)
        if not self.sandboxed:
            self._proxy_port = await self.egress.listen_tcp()
            await self.egress.start()
            return
        limits = CgroupLimits(self.settings.SLOT_MEMORY_MB, self.settings.SLOT_PIDS, self.settings.SLOT_CPU)
        cgroup = SlotCgroup(f"{instance_id(self.settings.run_dir)}-{self.layout.index}", limits)
        font_cache = await asyncio.to_thread(shared_font_cache, self.settings.run_dir)
        await asyncio.to_thread(self.seam.open)
        sandbox = self.sandbox = SlotSandbox(
            f"slot-{self.layout.index}",
            uid=self.uid,
            writable=[self.directory],
            socket_dir=self.socket_dir,
            seam=self.seam,
            home=self.directory,
            cgroup=cgroup,
            hidden=[self.settings.data_dir, self.settings.OPENBROWSE_HOME / ".env"],
            readonly=[browser_dir] if browser_dir is not None and not browser_dir.is_relative_to("/usr") else [],
            font_cache=font_cache,
            tmp_size_mb=self.settings.SLOT_DISK_MB,
            env=child_environment(self.tag),
            on_spawn=on_spawn,
            on_exit=on_exit,
        )
        await sandbox.start()
        assert sandbox.holder_pid is not None
        self.network = await asyncio.to_thread(
            SlotNetwork.open, f"slot-{self.layout.index}", sandbox.holder_pid, lambda: sandbox.running
        )
        egress_socket = await asyncio.to_thread(self.seam.bind_socket, "egress.sock")
        await self.egress.listen_unix(egress_socket, peer_uid=self.uid)
        await self.egress.start()
        env = self.environment(child_environment(self.tag))
        relay = egress_relay(self.seam.path / "egress.sock").process(env, wrap=sandbox.command, on_exit=on_exit)
        relay.start()
        on_spawn(relay)
        self.relays.append(relay)
        self._limits = LimitWatcher(
            f"slot-{self.layout.index}",
            cgroup,
            self.directory,
            self.settings.SLOT_DISK_MB,
            on_warning=self._warn,
            on_exceeded=on_exceeded,
        )

    def use_route(self, route: ProxyRoute | None) -> None:
        """Send the slot's traffic through ``route`` from now on (None: directly, under the policy)."""
        self.route = route
        if self.egress is not None:
            self.egress.use_route(route)

    def open_cdp_gate(self, version: dict[str, Any]) -> None:
        """Put the sandboxed Chromium's DevTools on its host loopback port, for the server's uid only, with the
        ``/json/version`` it gave at its start pinned (:mod:`.cdp_pin`). Nothing when unsandboxed."""
        if self.network is None or self._cdp_gate is not None:
            return
        gate = LoopbackGate(
            f"slot-{self.layout.index} CDP gate",
            self.layout.cdp_port,
            self.network,
            screen=cdp_screen(version, self.layout.cdp_port),
        )
        gate.open()
        self._cdp_gate = gate

    def watch_limits(self) -> None:
        if self._limits is not None:
            self._limits.start()

    def check_limits_now(self) -> None:
        """See :meth:`LimitWatcher.check_now`; nothing without a sandbox."""
        if self._limits is not None:
            self._limits.check_now()

    def _warn(self, text: str) -> None:
        for listener in list(self.warning_listeners):
            try:
                listener(text)
            except Exception:
                logger.exception("A sandbox warning listener failed")

    # -- what the slot's processes get ------------------------------------------------------------------------
    def display_confinement(self) -> Confinement | None:
        if self.sandbox is None:
            return None
        assert self.network is not None
        return Confinement(self.sandbox.command, self.socket_dir, self.uid, self.seam, self.network)

    def environment(self, base: Mapping[str, str]) -> dict[str, str]:
        return self.sandbox.environment(base) if self.sandbox is not None else dict(base)

    def command(self, argv: list[str]) -> list[str]:
        """``argv`` run inside the sandbox (as is when unsandboxed): for the script host."""
        return self.sandbox.command(argv) if self.sandbox is not None else list(argv)

    @property
    def owner_uid(self) -> int | None:
        return self.uid if self.sandbox is not None else None

    def browser_flags(self) -> list[str]:
        """Chromium's way out is the egress enforcer, loopback included; no UDP that bypasses it (WebRTC)."""
        return [
            f"--proxy-server=http://127.0.0.1:{self._proxy_port}",
            "--proxy-bypass-list=<-loopback>",
            "--force-webrtc-ip-handling-policy=disable_non_proxied_udp",
        ]

    # -- stop -----------------------------------------------------------------------------------------------
    async def aclose(self) -> None:
        """The CDP gate, the holder (which ends everything inside at once), the relay, the enforcer, the seam dir;
        shielded."""
        await run_shielded(self._close())

    async def _close(self) -> None:
        if self._limits is not None:
            await self._limits.aclose()
            self._limits = None
        gate, self._cdp_gate = self._cdp_gate, None
        if gate is not None:
            await gate.aclose()
        relays, self.relays = self.relays, []
        for relay in relays:
            relay.expect_exit()
        if self.sandbox is not None:
            # first: with the relays closed before it, the namespace took 1-2 s instead of 0.1 s to end (measured)
            await self.sandbox.aclose()
            self.sandbox = None
        for relay in relays:
            await relay.aclose()
        network, self.network = self.network, None
        if network is not None:
            network.close()
        if self.egress is not None:
            await self.egress.aclose()
            self.egress = None
        await asyncio.to_thread(self.seam.close)
