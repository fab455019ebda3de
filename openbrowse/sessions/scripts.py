"""The script host a session's ``run_code_file`` scripts run in (spec §11.3, §24.1), as the engine reaches it.

A sandboxed slot owns its :class:`~openbrowse.slots.script_host.ScriptHost` (``slot.script_host``, on the API
loop); the engine runs on its own thread, so :class:`HomeScriptHost` carries each run to the API loop and each of
the script's helper calls back to the engine's loop, where the session's store and clipboard live. A slot
without one (the unsandboxed path, until every slot has one) gets a host of the engine's own, with the identity
wrapper and the same bare environment. Either way the session's end kills the process, so the slot's next
session starts from an empty namespace.
"""

from __future__ import annotations

import asyncio
import secrets
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol
from urllib.parse import urlsplit

from openbrowse.domain.scripts import CallHandler, ScriptOutcome, ScriptRun
from openbrowse.sessions.loop_thread import run_on
from openbrowse.slots.script_host import ScriptHost, host_environment, identity
from openbrowse.slots.slot_files import SCRATCH_ROOT

if TYPE_CHECKING:
    from openbrowse.sessions.engine_host import HomeLoop


class SlotScriptHost(Protocol):
    """What a session needs of a script host (implemented by :class:`ScriptHost` and :class:`HomeScriptHost`)."""

    async def run(self, request: ScriptRun, on_call: CallHandler) -> ScriptOutcome: ...

    async def kill(self) -> None: ...


class HomeScriptHost:
    """A slot's script host (on the API loop) for an engine thread."""

    def __init__(self, home: HomeLoop, host: Any) -> None:
        self._home = home
        self._host = host

    async def run(self, request: ScriptRun, on_call: CallHandler) -> ScriptOutcome:
        engine_loop = asyncio.get_running_loop()

        async def call_on_engine(method: str, args: dict[str, Any]) -> Any:
            return await run_on(engine_loop, lambda: on_call(method, args))

        outcome: ScriptOutcome = await self._home.call(lambda: self._host.run(request, call_on_engine))
        return outcome

    async def kill(self) -> None:
        await self._home.call(self._host.kill)


class SessionScripts:
    """The engine's handle on its script host: the slot's, or one of its own; :meth:`aclose` ends the process."""

    def __init__(self, host: SlotScriptHost, own: ScriptHost | None = None, socket_dir: Path | None = None) -> None:
        self._host = host
        self._own = own
        self._socket_dir = socket_dir

    @classmethod
    def for_slot(cls, slot: object, name: str) -> SessionScripts:
        host: SlotScriptHost | None = getattr(slot, "script_host", None)
        if host is not None:
            return cls(host)
        port = urlsplit(str(getattr(slot, "cdp_url", ""))).port
        if port is None:
            raise ValueError(f"the slot's CDP URL has no port: {getattr(slot, 'cdp_url', None)!r}")
        # short on purpose: the channel is a Unix socket in here, and its path must fit in 108 bytes; the host
        # makes the dir on its first run, so a session that never runs a script leaves nothing behind
        socket_dir = SCRATCH_ROOT / f"openbrowse-sh-{secrets.token_hex(6)}"
        own = ScriptHost(name, identity, host_environment(), socket_dir, None, port)
        return cls(own, own, socket_dir)

    @property
    def host(self) -> SlotScriptHost:
        return self._host

    async def run(self, request: ScriptRun, on_call: CallHandler) -> ScriptOutcome:
        return await self._host.run(request, on_call)

    async def aclose(self) -> None:
        """Kill the session's script process (shielded); the engine's own host is shut down and its dir removed."""
        if self._own is None:
            await self._host.kill()
            return
        await self._own.aclose()
        if self._socket_dir is not None:
            await asyncio.to_thread(shutil.rmtree, self._socket_dir, True)
