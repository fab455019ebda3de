"""DevTools discovery for a raw browser's proxied CDP endpoint (spec §19.1, §23.4).

Clients handed the http form of ``cdpUrl`` (Playwright's ``connectOverCDP`` and Playwright MCP's
``--cdp-endpoint`` with an http URL, Puppeteer's ``browserURL`` and chrome-devtools-mcp's ``--browserUrl``,
browser-use) first ask ``{base}/json/version`` for the browser's ``webSocketDebuggerUrl``, then open that socket.
Chromium's own answer names its 127.0.0.1 port; the answer here names the proxied socket instead, so a client never
learns, nor tries, the raw port.

Which credential the returned URL carries follows how the request was authorised:

* ``?token=``: the client cannot set headers (Puppeteer's discovery fetch sends none), so the URL keeps the token;
* a browser token as ``Authorization: Bearer``: the client sends that header on the socket too (Playwright,
  browser-use), so the URL carries no token and the token stays out of URLs and logs;
* the API key: never put in a URL; a fresh browser token is, as ``POST /v3/browsers/{id}/token`` would issue.

Targets' own sockets (``/json/list``) are not proxied: every client we support drives pages through the browser
socket (flat sessions), so only ``/json/version`` is answered.
"""

from __future__ import annotations

from typing import Any

import httpx
from starlette.exceptions import HTTPException
from starlette.requests import Request

from openbrowse.api.browser_schemas import proxied_cdp_url
from openbrowse.api.resource_auth import presented_cdp_token
from openbrowse.config import Settings
from openbrowse.sessions.browsers import BrowserService

__all__ = ["discovery_token", "version_document"]


def discovery_token(request: Request, browser_id: str, browsers: BrowserService, settings: Settings) -> str | None:
    """The browser token to put in the returned ``webSocketDebuggerUrl``, if any (see the module's rules).

    The request has already passed :func:`openbrowse.api.resource_auth.require_cdp_access`."""
    query_token = request.query_params.get("token")
    if browsers.tokens.valid(browser_id, query_token):
        return query_token
    if presented_cdp_token(request, browser_id) is not None or not settings.auth_enabled:
        return None
    issued = browsers.issue_token(browser_id, settings.BROWSER_TOKEN_TTL_S)
    return issued.value if issued is not None else None


async def version_document(
    request: Request, browser_id: str, browsers: BrowserService, settings: Settings, http: httpx.AsyncClient
) -> dict[str, Any]:
    """Chromium's ``/json/version`` for this browser, its ``webSocketDebuggerUrl`` pointing through this server.

    The browser being unknown or ended raises as :meth:`BrowserService.cdp_endpoint` does (404/422); Chromium not
    answering is a 502."""
    endpoint = await browsers.cdp_endpoint(browser_id)
    try:
        upstream = await http.get(f"{endpoint.http_url}/json/version")
        version = upstream.json()
    except (httpx.HTTPError, ValueError) as exc:
        raise HTTPException(502, "The browser's DevTools endpoint did not answer") from exc
    if not isinstance(version, dict):
        raise HTTPException(502, "The browser's DevTools endpoint gave an unexpected answer")
    token = discovery_token(request, browser_id, browsers, settings)
    version["webSocketDebuggerUrl"] = proxied_cdp_url(request, settings, browser_id, token)
    return version
