"""ControlError: every refusal of the browser control API (spec §20.4), with its HTTP status and seed code.

The body on the wire is ``{error, code?, detail}``: ``error`` for the reference client (OpenClaw reads it),
``detail`` as everywhere else in the API (spec §2.3). Statuses are chosen here, next to the codes, because the seed
fixes each code's status; the API layer only renders what it is given.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "ControlError",
    "act_invalid",
    "browser_not_live",
    "operation_failed",
    "ref_stale",
    "session_busy",
    "tab_not_found",
]


class ControlError(Exception):
    """A control call that cannot be served. ``message`` is one sentence; ``code`` is the seed's or ours."""

    def __init__(self, status: int, message: str, code: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.code = code

    def body(self) -> dict[str, Any]:
        body: dict[str, Any] = {"error": self.message, "detail": self.message}
        if self.code is not None:
            body["code"] = self.code
        return body


def act_invalid(message: str) -> ControlError:
    return ControlError(400, message, "ACT_INVALID_REQUEST")


def operation_failed(message: str) -> ControlError:
    return ControlError(422, message, "ACT_OPERATION_FAILED")


def ref_stale(ref: str) -> ControlError:
    return ControlError(409, f"Ref {ref} is unknown or stale; take a new snapshot of this tab.", "REF_STALE")


def tab_not_found(target_id: str) -> ControlError:
    return ControlError(404, f"No tab matches {target_id!r}.", "TAB_NOT_FOUND")


def session_busy() -> ControlError:
    return ControlError(409, "Agent is running; pause the session first", "session_busy")


def browser_not_live() -> ControlError:
    return ControlError(409, "The browser is not live.", "browser_not_live")
