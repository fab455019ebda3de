"""The network policy inside Chromium: every request of every tab is checked before it leaves the browser.

Under ``NETWORK_POLICY=public-only`` the service opens its own CDP connection to the browser target and enables
the ``Fetch`` domain there for all URLs at the request stage. Chromium then pauses every request of every
target (documents, frames, subresources, workers, and each redirect hop as a new request) until this guard
answers: continue if the URL passes :class:`NetworkRules`, else fail it with ``BlockedByClient``, which the page
shows as ``ERR_BLOCKED_BY_CLIENT``. If this connection drops, Chromium lets requests through again (the
``Fetch`` domain belongs to the connection), so the guard is fail-open on its own death; it logs that loudly.

The service's own code tab (``/codeview`` on this server's loopback address) is exempt by its exact URL: a
static page with no data, which the agent layer opens, never the agent.

Limitation: Chromium resolves names itself, so a DNS answer that changes between this check and Chromium's
connect is not caught here (``http_fetch`` pins the checked address; the browser cannot).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from typing import Any

import httpx
import websockets
from websockets.asyncio.client import ClientConnection

from openbrowse.network.policy import NetworkRefused, NetworkRules
from openbrowse.shielding import run_shielded

logger = logging.getLogger(__name__)

DECISION_TTL = 30.0
_CHECKED_SCHEMES = {"http": "http", "https": "https", "ws": "http", "wss": "https"}


class NavigationGuard:
    """Owns one CDP connection and the task answering ``Fetch.requestPaused``; close with :meth:`aclose`."""

    def __init__(self, connection: ClientConnection, rules: NetworkRules, exempt: frozenset[str] = frozenset()) -> None:
        self._connection = connection
        self._rules = rules
        self._exempt = exempt
        self._ids = iter(range(1, 1 << 62))
        self._decisions: dict[str, tuple[float, str | None]] = {}
        self._pending: set[asyncio.Task[None]] = set()
        self._reader: asyncio.Task[None] | None = None
        self.refused: list[tuple[str, str]] = []

    @classmethod
    async def start(cls, cdp_url: str, rules: NetworkRules, exempt: frozenset[str] = frozenset()) -> NavigationGuard:
        """``exempt``: exact URLs that always pass (our own code tab on loopback, spec §11.3)."""
        async with httpx.AsyncClient(trust_env=False, timeout=10) as client:
            version = (await client.get(f"{cdp_url.rstrip('/')}/json/version")).json()
        connection = await websockets.connect(version["webSocketDebuggerUrl"], max_size=None, open_timeout=10)
        guard = cls(connection, rules, exempt)
        await guard._send("Fetch.enable", {"patterns": [{"urlPattern": "*", "requestStage": "Request"}]})
        guard._reader = asyncio.create_task(guard._read(), name="navigation-guard")
        return guard

    async def aclose(self) -> None:
        tasks = [t for t in (self._reader, *self._pending) if t is not None]
        for task in tasks:
            task.cancel()
        await run_shielded(self._close(tasks))

    async def _close(self, tasks: list[asyncio.Task[None]]) -> None:
        with contextlib.suppress(Exception):
            await asyncio.gather(*tasks, return_exceptions=True)
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self._connection.close(), timeout=5)

    async def _send(self, method: str, params: dict[str, Any]) -> None:
        message = {"id": next(self._ids), "method": method, "params": params}
        await self._connection.send(json.dumps(message))

    async def _read(self) -> None:
        try:
            async for raw in self._connection:
                message = json.loads(raw)
                if message.get("method") == "Fetch.requestPaused":
                    task = asyncio.create_task(self._answer(message["params"]))
                    self._pending.add(task)
                    task.add_done_callback(self._pending.discard)
        except websockets.ConnectionClosed:
            logger.warning("The navigation guard lost its CDP connection; the browser is no longer filtered")

    async def _answer(self, params: dict[str, Any]) -> None:
        request_id = params["requestId"]
        url = str(params.get("request", {}).get("url", ""))
        reason = await self._refusal(url)
        with contextlib.suppress(websockets.ConnectionClosed):
            if reason is None:
                await self._send("Fetch.continueRequest", {"requestId": request_id})
            else:
                self.refused.append((url, reason))
                logger.info("Blocked %s: %s", url[:200], reason)
                await self._send("Fetch.failRequest", {"requestId": request_id, "errorReason": "BlockedByClient"})

    async def _refusal(self, url: str) -> str | None:
        if url in self._exempt:
            return None
        scheme, sep, rest = url.partition("://")
        checked = _CHECKED_SCHEMES.get(scheme.lower())
        if not sep or checked is None:
            return None  # data:, blob:, about:, chrome: never leave the browser
        key = f"{checked}://{rest.split('/', 1)[0]}"
        cached = self._decisions.get(key)
        now = time.monotonic()
        if cached is not None and cached[0] > now:
            return cached[1]
        try:
            await self._rules.check(f"{checked}://{rest}")
            reason = None
        except NetworkRefused as refused:
            reason = refused.message
        except Exception as exc:  # never leave a request paused: an unexpected failure refuses it
            reason = f"The network policy check failed: {exc}"
        self._decisions[key] = (now + DECISION_TTL, reason)
        return reason
