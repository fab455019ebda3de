"""The script host a session's ``run_code_file`` scripts run in (spec §11.3, §24.1), as the engine reaches it.

A sandboxed slot owns its :class:`~openbrowse.slots.script_host.ScriptHost` (``slot.script_host``, on the API
loop); the engine runs on its own thread, so :class:`HomeScriptHost` carries each run to the API loop and each of
the script's helper calls back to the engine's loop, where the session's store and clipboard live. The session's
end kills the process, so the slot's next session starts from an empty namespace.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any, Protocol

from openbrowse.domain.scripts import CallHandler, ScriptOutcome, ScriptRun
from openbrowse.sessions.loop_thread import run_on

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
    """The engine's handle on its slot's script host; :meth:`aclose` kills the process (the slot's next session
    starts from an empty namespace)."""

    def __init__(self, host: SlotScriptHost) -> None:
        self._host = host

    @classmethod
    def for_slot(cls, slot: object) -> SessionScripts | None:
        """The slot's host, or None (then ``run_code_file`` is not offered) when the slot has none."""
        host: SlotScriptHost | None = getattr(slot, "script_host", None)
        return None if host is None else cls(host)

    @property
    def host(self) -> SlotScriptHost:
        return self._host

    async def run(self, request: ScriptRun, on_call: CallHandler) -> ScriptOutcome:
        return await self._host.run(request, on_call)

    async def aclose(self) -> None:
        """Kill the session's script process (shielded)."""
        await self._host.kill()
