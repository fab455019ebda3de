"""The OpenBrowse exception tree. Domain code raises these; only ``api/errors.py`` maps them to HTTP.

OpenBrowseError
├── ConfigError                 invalid settings at start-up
├── NotFound                    an id that does not exist
│   ├── SessionNotFound
│   ├── ProfileNotFound
│   ├── BrowserNotFound
│   └── WorkspaceNotFound
├── MalformedRequest            a request body that cannot be interpreted at all
├── InvalidRequest              a well-formed request the service refuses (wrong state, bad model, bad effort)
│   ├── InvalidTransition       a status change the transition table does not allow
│   ├── SessionPaused           a person has taken over; the agent's work waits (code on the wire)
│   ├── NotPausable             pause of something that is not running, parked or live
│   ├── NotPaused               resume of something that is not paused
│   └── WorkspaceRequired       a cached script without a workspace to keep it in (code on the wire)
│   └── ProxyUnavailable        a proxyCountryCode the operator's PROXY_POOL does not have (code on the wire)
├── ProcessError                a supervised child process misbehaved
│   ├── ProcessStartError       it could not be spawned or never became ready (stderr tail attached)
│   └── ProcessDied             it exited while it was supposed to be running
│       └── ResourceLimitExceeded  a slot's sandbox went over a cap (memory twice, or disk)
├── BrowserUnavailable          no usable Chromium binary, or the browser could not be launched (503)
│   ├── SandboxUnavailable      (slots.sandbox) the host refuses the sandbox and ALLOW_UNSANDBOXED is not set
│   └── SlotBlocked             (slots.foreign) a slot's display or port belongs to another program
├── StoreUnavailable            the database cannot be reached, at start-up or after the retries (503)
│   └── NodeFenced              the cluster declared this node gone: its writes are refused (503)
├── TooLarge                    a file or a workspace would go over its size limit (413)
├── OverLimit                   a bound of the control plane is reached: the queue, the event streams (429)
│   └── CapacityExceeded        (sessions.browser_capacity) every slot is busy and the caller would not wait
├── SlotUnreachable             (slots.netns) a pinned endpoint inside a slot is gone; callers retry or end
├── BackendClosed               (mcpbrowser.shared) the shared MCP browser was shut down with the server
└── NetworkRefused              (network.refusal) the network policy refused a destination; tools report it

Classes marked with a module live beside the code that raises them, because layers below ``api`` must not
import upward; ``tests/unit/test_error_tree.py`` checks that every subclass anywhere is drawn here.
"""

from __future__ import annotations

__all__ = [
    "BrowserNotFound",
    "BrowserUnavailable",
    "ConfigError",
    "InvalidRequest",
    "InvalidTransition",
    "MalformedRequest",
    "NodeFenced",
    "NotFound",
    "NotPausable",
    "NotPaused",
    "OpenBrowseError",
    "OverLimit",
    "ProcessDied",
    "ProcessError",
    "ProcessStartError",
    "ProfileNotFound",
    "ProxyUnavailable",
    "ResourceLimitExceeded",
    "SessionNotFound",
    "SessionPaused",
    "StoreUnavailable",
    "TooLarge",
    "WorkspaceNotFound",
    "WorkspaceRequired",
]


class OpenBrowseError(Exception):
    """Base class. ``message`` is one user-facing sentence; ``code`` is a stable machine name."""

    code = "openbrowse_error"
    code_on_wire = False
    """Whether the error body carries ``code`` beside ``detail`` (for codes the spec names)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class ConfigError(OpenBrowseError):
    """Settings could not be validated; the server refuses to start."""

    code = "config_error"


class NotFound(OpenBrowseError):
    """An id in the request does not exist."""

    code = "not_found"


class SessionNotFound(NotFound):
    code = "session_not_found"

    def __init__(self, message: str = "Session not found") -> None:
        super().__init__(message)


class ProfileNotFound(NotFound):
    code = "profile_not_found"

    def __init__(self, message: str = "Profile not found") -> None:
        super().__init__(message)


class BrowserNotFound(NotFound):
    code = "browser_not_found"

    def __init__(self, message: str = "Browser not found") -> None:
        super().__init__(message)


class WorkspaceNotFound(NotFound):
    code = "workspace_not_found"

    def __init__(self, message: str = "Workspace not found") -> None:
        super().__init__(message)


class MalformedRequest(OpenBrowseError):
    """The request body cannot be interpreted (HTTP 400)."""

    code = "malformed_request"


class InvalidRequest(OpenBrowseError):
    """The request is well-formed but the service refuses it (HTTP 422)."""

    code = "invalid_request"


class InvalidTransition(InvalidRequest):
    """A status change the session state machine does not allow."""

    code = "invalid_transition"


class SessionPaused(InvalidRequest):
    """A person has taken over the session: the agent's work waits until they hand back (spec §21.5)."""

    code = "session_paused"
    code_on_wire = True

    def __init__(self, message: str = "Session is paused") -> None:
        super().__init__(message)


class NotPausable(InvalidRequest):
    """Only a running session, a parked keep-alive session or a live raw browser can be paused."""

    code = "session_not_pausable"
    code_on_wire = True


class NotPaused(InvalidRequest):
    """A resume for something that is not paused."""

    code = "session_not_paused"
    code_on_wire = True


class WorkspaceRequired(InvalidRequest):
    """``cacheScript`` asked for a cached script but no workspace is attached to keep it in (spec §27.3)."""

    code = "workspace_required"
    code_on_wire = True

    def __init__(
        self, message: str = "A cached script needs a workspace: pass workspaceId or set cacheScript to false."
    ) -> None:
        super().__init__(message)


class ProxyUnavailable(InvalidRequest):
    """``proxyCountryCode`` names a country the operator's ``PROXY_POOL`` has no proxy for (spec §28.1)."""

    code = "proxy_unavailable"
    code_on_wire = True


class ProcessError(OpenBrowseError):
    """A supervised child process misbehaved."""

    code = "process_error"


class ProcessStartError(ProcessError):
    """A child could not be spawned or never became ready. ``stderr_tail`` holds its last output."""

    code = "process_start_error"

    def __init__(self, message: str, stderr_tail: str = "") -> None:
        super().__init__(message)
        self.stderr_tail = stderr_tail


class ProcessDied(ProcessError):
    """A child exited while it was supposed to be running."""

    code = "process_died"

    def __init__(self, name: str, returncode: int | None) -> None:
        super().__init__(f"{name} exited unexpectedly (exit code {returncode})")
        self.name = name
        self.returncode = returncode


class ResourceLimitExceeded(ProcessDied):
    """A slot's sandbox went over one of its caps (spec §24.5): ``limit`` is ``memory`` or ``disk``."""

    code = "resource_limit"

    def __init__(self, limit: str, cap: str, detail: str) -> None:
        OpenBrowseError.__init__(self, f"The browser sandbox went over its {limit} cap of {cap}: {detail}.")
        self.name = "sandbox"
        self.returncode = None
        self.limit = limit


class BrowserUnavailable(OpenBrowseError):
    """No usable Chromium binary was found, or the browser could not be launched."""

    code = "browser_unavailable"


class TooLarge(OpenBrowseError):
    """A file or a workspace would go over its size limit (spec §27.1): HTTP 413, nothing of it is kept."""

    code = "too_large"


class StoreUnavailable(OpenBrowseError):
    """The database cannot be reached (at start-up, or mid-run after the retries gave up): HTTP 503."""

    code = "store_unavailable"


class NodeFenced(StoreUnavailable):
    """The cluster declared this node gone (it stopped heartbeating), so its writes are refused (spec §26.5)."""

    code = "node_fenced"


class OverLimit(OpenBrowseError):
    """A bound of the control plane is reached (spec §25.1): the request is refused, nothing was done (HTTP 429)."""

    code = "over_limit"

    def __init__(self, message: str, retry_after: int = 5) -> None:
        super().__init__(message)
        self.retry_after = retry_after
