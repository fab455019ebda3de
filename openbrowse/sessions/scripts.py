"""The script host a session's ``run_code_file`` scripts run in (spec §11.3, §24.1), as the engine reaches it.

A sandboxed slot owns its :class:`~openbrowse.slots.script_host.ScriptHost` (``slot.script_host``). The session's
end kills the process, so the slot's next session starts from an empty namespace.
"""

from __future__ import annotations

from typing import Protocol

from openbrowse.domain.scripts import CallHandler, ScriptOutcome, ScriptRun


class SlotScriptHost(Protocol):
    """What a session needs of a script host (implemented by :class:`~openbrowse.slots.script_host.ScriptHost`)."""

    async def run(self, request: ScriptRun, on_call: CallHandler) -> ScriptOutcome: ...

    async def kill(self) -> None: ...


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
