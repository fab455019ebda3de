"""What a turn of the agent produces, as the session layer consumes it."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from openbrowse.domain.end_reasons import EndReason
from openbrowse.domain.failures import Failure


class TurnEnding(StrEnum):
    FINISHED = "finished"  # done (successful or not), steps exhausted, salvaged: stopped / parked
    BUDGET = "budget"  # maxCostUsd reached
    TIMEOUT = "timeout"  # TASK_TIMEOUT elapsed
    ERROR = "error"  # unrecoverable exception


@dataclass(frozen=True, slots=True)
class TurnOutcome:
    """The end of one dispatch. ``summary`` becomes ``lastStepSummary``."""

    ending: TurnEnding
    summary: str
    output: Any = None
    is_task_successful: bool | None = None
    failure: Failure | None = None
    release_browser: bool = False
    end_reason: EndReason | None = None


@dataclass(frozen=True, slots=True)
class Salvage:
    """What a stop or time-out keeps of an interrupted turn (spec §13.8), and the sentence saying so."""

    output: Any
    is_task_successful: bool
    kept: str


NOTHING_KEPT = Salvage(output=None, is_task_successful=False, kept="There was no output to keep.")
