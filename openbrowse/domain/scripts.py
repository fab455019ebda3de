"""What a ``run_code_file`` run is, as the agent asks for it and the script host answers (spec §11.3, §24.1).

The script runs in a child process (the script host, inside the slot's sandbox); the agent hands it a
:class:`ScriptRun` and a :data:`CallHandler` that serves the script's helper calls (files, store, clipboard,
``fetch``, ``read_pages``) on the server, and gets a :class:`ScriptOutcome` back. The agent sees only the
:class:`ScriptRunner` protocol; the process behind it belongs to the slot layer.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Protocol


class ScriptEnd(StrEnum):
    FINISHED = "finished"  # ran to its end
    FAILED = "failed"  # raised (the error says what)
    TIMED_OUT = "timed_out"  # still awaiting at the limit: stopped inside the host, the namespace kept
    KILLED = "killed"  # still running past the limit (a loop that never yields): the process was killed
    CRASHED = "crashed"  # the host process died under the script (out of memory, os._exit, a signal)
    UNAVAILABLE = "unavailable"  # no host could be started


@dataclass(frozen=True, slots=True)
class ScriptRun:
    owner: str
    """The session the run belongs to: a host never carries one session's namespace into another's run."""
    source: str
    filename: str
    """The name tracebacks show (``scripts/<name>.py``)."""
    target_id: str | None
    """The agent's focused tab: ``browser.*`` acts on it."""
    limit: float
    """Seconds the script may run; past it the host stops it, and a script that does not stop is killed."""
    store: bool = False
    """Whether the session has an answer store (its helpers exist in the namespace only then)."""


@dataclass(frozen=True, slots=True)
class ScriptOutcome:
    end: ScriptEnd
    stdout: str
    """What the script printed, up to the host's keep limit (``stdout_chars`` counts all of it)."""
    stdout_chars: int
    error: str | None = None
    namespace_lost: bool = False
    """This run started in a fresh process because an earlier one was killed or died: earlier variables are gone."""


class ScriptCallError(Exception):
    """A helper call the server refuses or that failed; ``kind`` names the exception the script sees."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message


CallHandler = Callable[[str, dict[str, Any]], Awaitable[Any]]
"""Serves one helper call ``(method, args)`` of the running script; raises :class:`ScriptCallError` to refuse."""


class ScriptRunner(Protocol):
    """Runs a session's scripts in its persistent namespace, outside the server process."""

    async def run(self, request: ScriptRun, on_call: CallHandler) -> ScriptOutcome: ...
