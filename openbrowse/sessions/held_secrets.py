"""Which sessions' secret values every sink redacts (spec §25.3): from the request that sent them until the row no
longer holds them and nothing of the run can write any more."""

from __future__ import annotations

from openbrowse.domain.ids import SessionId
from openbrowse.domain.redaction import REDACTORS
from openbrowse.domain.secrets import ScopedSecrets, secret_values


class HeldSecrets:
    def __init__(self) -> None:
        self._retired: set[SessionId] = set()
        """Wiped from the row while a run still writes: redacted until that run ends."""

    def hold(self, session_id: SessionId, secrets: ScopedSecrets | None) -> None:
        """Every sink redacts these values from now on (together with any the session held before)."""
        if not secrets:
            return
        self._retired.discard(session_id)
        REDACTORS.add(session_id, secret_values(secrets))

    def retire(self, session_id: SessionId, *, run_alive: bool) -> None:
        """The row no longer holds secrets: forget them now, or once the run (``run_alive``) has ended."""
        if run_alive:
            self._retired.add(session_id)
        else:
            REDACTORS.drop(session_id)

    def run_ended(self, session_id: SessionId) -> None:
        if session_id in self._retired:
            self.forget(session_id)

    def forget(self, session_id: SessionId) -> None:
        """The session is gone (or its secrets retired and its run over)."""
        self._retired.discard(session_id)
        REDACTORS.drop(session_id)
