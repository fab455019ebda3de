"""The service's rules for a session's run that are not the run's own business: whether it may start at all, and
the live-view link its browser is shown at. The app builds one :class:`SessionPolicy`; workers ask it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from openbrowse.config import Settings
from openbrowse.domain.ids import SessionId
from openbrowse.domain.sessions import SessionRecord
from openbrowse.llm.catalog import resolve_model
from openbrowse.llm.keys import missing_provider_key


class RunPolicy(Protocol):
    def never_started_problem(self, record: SessionRecord) -> str | None:
        """Why this run cannot start (shown as its error), or None."""
        ...

    def live_url(self, session_id: SessionId) -> str:
        """The live-view link of a browser that just came up for ``session_id`` (a fresh view token)."""
        ...


class SessionPolicy:
    """:class:`RunPolicy` of the server: a run needs its model's provider key; ``issue_live_url`` makes the link
    (the view tokens belong to the API layer)."""

    def __init__(self, settings: Settings, issue_live_url: Callable[[SessionId], str]) -> None:
        self._settings = settings
        self._issue_live_url = issue_live_url

    def never_started_problem(self, record: SessionRecord) -> str | None:
        missing = missing_provider_key(resolve_model(record.llm_model), self._settings)
        if missing is None:
            return None
        return f"Model '{record.llm_model}' needs {missing}, which is not configured"

    def live_url(self, session_id: SessionId) -> str:
        return self._issue_live_url(session_id)
