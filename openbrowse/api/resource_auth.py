"""Per-resource credentials beyond ``Authenticator.require_viewer``: tokens carried in a path, and CDP tokens.

* The live view's assets can be fetched as ``/vnc/{id}/_t/{viewToken}/<asset>``: ES-module imports inside
  noVNC are relative and would drop a ``?token=`` query, but they keep a path prefix (see ``routes/live.py``).
* A raw browser's ``cdpUrl`` carries a **CDP token** of its own (``Authorization: Bearer <token>`` or
  ``?token=``). It is derived from the browser id like the view token but with a distinct label, so a shared
  ``liveUrl`` (meant for watching, and embeddable in an iframe) never lets its holder drive the browser.
  The API key is accepted as well.

Every check goes through the same per-IP failure throttle as the API (spec §2.1).
"""

from __future__ import annotations

from starlette.requests import HTTPConnection

from openbrowse.api.auth import Authenticator, constant_time_equal, presented_key, view_token
from openbrowse.config import Settings

__all__ = ["cdp_token", "require_cdp_access", "require_path_token", "token_matches"]

_CDP_LABEL = "cdp:"


def cdp_token(api_key: str, browser_id: str) -> str:
    """The token in a raw browser's ``cdpUrl``: hex HMAC-SHA256 of ``cdp:<id>`` keyed with API_KEY, 32 chars."""
    return view_token(api_key, _CDP_LABEL + browser_id)


def token_matches(presented: str | None, expected: str) -> bool:
    return bool(presented) and constant_time_equal(presented or "", expected)


def require_path_token(
    authenticator: Authenticator, settings: Settings, conn: HTTPConnection, resource_id: str, token: str
) -> None:
    """A view token taken from the URL path authorises that resource's live-view routes."""
    expected = view_token(settings.API_KEY or "", resource_id)
    authenticator.require(conn, lambda: token_matches(token, expected))


def require_cdp_access(authenticator: Authenticator, settings: Settings, conn: HTTPConnection, browser_id: str) -> None:
    """The browser's CDP token (Bearer header or ``?token=``), or the API key."""
    api_key = settings.API_KEY or ""
    expected = cdp_token(api_key, browser_id)

    def check() -> bool:
        header = presented_key(conn)
        if token_matches(header, api_key) or token_matches(header, expected):
            return True
        return token_matches(conn.query_params.get("token"), expected)

    authenticator.require(conn, check)
