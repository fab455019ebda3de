"""Wire side of a raw browser's human takeover (spec §21.5), and the resume routes' credentials.

* ``PauseBody`` ``{reason?}`` and ``ResumeBody`` ``{note?}``: the bodies of ``POST …/pause`` and ``POST …/resume``
  (refusals are ``NotPausable`` / ``NotPaused``, whose ``code`` the error handler puts on the wire).
* :func:`require_key_or_takeover`: besides the API key (or the dashboard's credentials), the target's open takeover
  token as ``Authorization: Bearer <token>`` authorises exactly the resume call, so the viewer page opened from
  ``takeoverUrl`` can hand the session or browser back without holding the API key.
"""

from __future__ import annotations

from pydantic import Field
from starlette.requests import HTTPConnection

from openbrowse.api.auth import presented_key
from openbrowse.api.deps import authenticator_of, takeovers_of
from openbrowse.api.schemas import WireModel

__all__ = ["MAX_NOTE", "MAX_REASON", "PauseBody", "ResumeBody", "require_key_or_takeover"]

MAX_REASON = 500
MAX_NOTE = 2000


class PauseBody(WireModel):
    reason: str | None = Field(default=None, max_length=MAX_REASON)


class ResumeBody(WireModel):
    note: str | None = Field(default=None, max_length=MAX_NOTE)


def require_key_or_takeover(conn: HTTPConnection, target_id: str) -> None:
    """The API key or the dashboard's credentials, or the target's open takeover token as a Bearer token
    (counted by the same failure throttle as every credential, spec §2.1)."""
    takeovers = takeovers_of(conn)
    authenticator_of(conn).require_api_key(conn, also=lambda: takeovers.allows(target_id, presented_key(conn)))
