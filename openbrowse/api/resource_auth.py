"""Per-resource credentials beyond ``Authenticator.require_viewer``: tokens carried in a path, and CDP tokens.

* The live view's assets can be fetched as ``/vnc/{id}/_t/{viewToken}/<asset>``: ES-module imports inside
  noVNC are relative and would drop a ``?token=`` query, but they keep a path prefix (see ``routes/live.py``).
* A raw browser's CDP endpoint takes one of the browser's own short-lived tokens (spec §21.4,
  :mod:`openbrowse.sessions.browser_tokens`) as ``Authorization: Bearer <token>``, as the WebSocket subprotocol
  pair ``["openbrowse", "openbrowse.bearer.<token>"]`` (clients that cannot set headers) or as ``?token=`` (the
  BU SDK passes ``cdpUrl`` alone). Tokens are random and unrelated to the live view's, so a shared ``liveUrl``
  never lets its holder drive the browser. The API key is accepted as well.

Every check goes through the same per-IP failure throttle as the API (spec §2.1).
"""

from __future__ import annotations

from collections.abc import Sequence

from starlette.requests import HTTPConnection

from openbrowse.api.auth import Authenticator, constant_time_equal, presented_key
from openbrowse.config import Settings
from openbrowse.sessions.browsers import BrowserService

__all__ = [
    "CDP_SUBPROTOCOL",
    "presented_cdp_token",
    "require_cdp_access",
    "require_path_token",
    "token_matches",
]

CDP_SUBPROTOCOL = "openbrowse"
_BEARER_SUBPROTOCOL = f"{CDP_SUBPROTOCOL}.bearer."


def token_matches(presented: str | None, expected: str) -> bool:
    return bool(presented) and constant_time_equal(presented or "", expected)


def require_path_token(authenticator: Authenticator, conn: HTTPConnection, resource_id: str, token: str) -> None:
    """A view token taken from the URL path authorises that resource's live-view routes."""
    authenticator.require(conn, lambda: authenticator.view_tokens.allows(resource_id, token))


def _subprotocol_token(conn: HTTPConnection) -> str | None:
    offered: Sequence[str] = conn.scope.get("subprotocols") or ()
    for name in offered:
        if name.startswith(_BEARER_SUBPROTOCOL):
            return name.removeprefix(_BEARER_SUBPROTOCOL) or None
    return None


def presented_cdp_token(conn: HTTPConnection, browser_id: str) -> str | None:
    """The valid browser token this request carries (header, subprotocol or query), if any."""
    browsers: BrowserService = conn.app.state.browsers
    for candidate in (presented_key(conn), _subprotocol_token(conn), conn.query_params.get("token")):
        if browsers.tokens.valid(browser_id, candidate):
            return candidate
    return None


def require_cdp_access(authenticator: Authenticator, settings: Settings, conn: HTTPConnection, browser_id: str) -> None:
    """One of the browser's unexpired CDP tokens, or the API key; anything else is a 401."""
    api_key = settings.API_KEY or ""

    def check() -> bool:
        return token_matches(presented_key(conn), api_key) or presented_cdp_token(conn, browser_id) is not None

    authenticator.require(conn, check)
