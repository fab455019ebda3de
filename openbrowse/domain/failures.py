"""Why a run failed: the recorded ``failureKind`` vocabulary (spec §15.2)."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class FailureKind(StrEnum):
    BUDGET_EXCEEDED = "budget_exceeded"
    SESSION_TIMEOUT = "session_timeout"
    PROVIDER_RATE_LIMIT = "provider_rate_limit"
    PROVIDER_TIMEOUT = "provider_timeout"
    PROVIDER_CONNECTION_ERROR = "provider_connection_error"
    PROVIDER_SERVER_ERROR = "provider_server_error"
    PROVIDER_ERROR = "provider_error"
    INVALID_OUTPUT = "invalid_output"
    AGENT_FAILURE = "agent_failure"
    RESOURCE_LIMIT = "resource_limit"
    STORE_UNAVAILABLE = "store_unavailable"
    """The database was lost mid-run for longer than the retries (spec §26.1); written once it answered again."""


@dataclass(frozen=True, slots=True)
class Failure:
    """A classified failure: the kind plus the provider's HTTP status where there was one."""

    kind: FailureKind
    status_code: int | None = None
    message: str = ""
