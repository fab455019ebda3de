"""What the agent is doing right now: the in-memory activity and code records (spec §4.8).

The agent layer reports through :class:`ActivityReporter`, a protocol it receives by parameter; the session
layer keeps the records on a board and the events stream sends them. Nothing here is persisted.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Protocol

STREAM_LIMIT = 6000
"""The reasoning text an activity carries: the full accumulated text, cut to this many characters."""


class ActivityKind(StrEnum):
    PREPARING = "preparing"
    REASONING = "reasoning"
    ACTIONS = "actions"
    READING = "reading"
    CODE = "code"
    CAPTCHA = "captcha"


class CodeStatus(StrEnum):
    WRITING = "Writing"
    RUNNING = "Running"
    DONE = "Done"


@dataclass(frozen=True, slots=True)
class Activity:
    """One phase of a run, e.g. ``Preparing next step``, ``Reasoning`` (with ``stream``), ``Reading 6 pages``."""

    label: str
    kind: ActivityKind
    started_at: datetime
    step: int | None = None
    stream: str | None = None

    @property
    def spin(self) -> bool:
        """Phases without streamed text show a spinner."""
        return not self.stream


@dataclass(frozen=True, slots=True)
class CodeDraft:
    """The ``run_code_file`` source as the model writes it, and where its run stands."""

    name: str
    code: str
    status: CodeStatus


class ActivityReporter(Protocol):
    """Where the agent says what it is doing. Calls are cheap and synchronous (in-memory)."""

    def begin(self, label: str, kind: ActivityKind, *, step: int | None = None) -> None:
        """A new phase starts now."""

    def stream(self, text: str) -> None:
        """The current phase's streamed text so far (the full accumulated text)."""

    def finish(self) -> None:
        """Nothing is happening any more (the turn ended)."""

    def code(self, name: str, code: str, status: CodeStatus) -> None:
        """The code being written or run changed."""


class NoActivity:
    """A reporter that records nothing (runs outside a session, unit tests)."""

    def begin(self, label: str, kind: ActivityKind, *, step: int | None = None) -> None:  # noqa: ARG002
        return None

    def stream(self, text: str) -> None:  # noqa: ARG002
        return None

    def finish(self) -> None:
        return None

    def code(self, name: str, code: str, status: CodeStatus) -> None:  # noqa: ARG002
        return None


NO_ACTIVITY: ActivityReporter = NoActivity()
