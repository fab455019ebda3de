"""What a run may ask of the session manager: the one way a worker changes its session's status.

The :class:`~openbrowse.sessions.manager.SessionManager` implements it and hands itself to each worker it starts,
so the flow stays one-way (manager → worker → engine) and the worker never sees the rest of the manager.
"""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager
from typing import Any, Protocol

from openbrowse.domain.ids import SessionId
from openbrowse.domain.sessions import SessionRecord
from openbrowse.sessions.states import Trigger


class StatusPort(Protocol):
    @property
    def draining(self) -> bool:
        """A maintenance drain is under way (spec §21.6): a finished keep-alive turn does not park."""
        ...

    def lock(self, session_id: SessionId) -> AbstractAsyncContextManager[None]:
        """Serialises the status changes of one session."""
        ...

    async def apply(self, session_id: SessionId, trigger: Trigger, **changes: Any) -> SessionRecord:
        """Move the session along the transition table and write ``changes`` with it."""
        ...

    async def apply_locked(self, session_id: SessionId, trigger: Trigger, **changes: Any) -> SessionRecord:
        """:meth:`apply` for a caller already holding :meth:`lock`."""
        ...
