"""Moving a profile jar into and out of a live Chromium over CDP (spec §9.2, §9.3).

One :class:`CdpLink` (our own DevTools connection to the browser endpoint, beside browser-use's) per run:

* **load**: cookies through ``Storage.setCookies``; each origin's ``localStorage`` and ``sessionStorage`` are
  written from a document of that origin, which needs a page load: the run's own first tab navigates to each
  origin with the document request answered locally (``Fetch.fulfillRequest``, no network), the items are set,
  and the tab returns to ``about:blank``. localStorage is shared per origin, and sessionStorage belongs to the
  tab, so the agent's first page sees both.
* **origins visited**: ``Target.setDiscoverTargets`` reports every page and out-of-process frame as it
  navigates; their http(s) origins are collected for the export.
* **export**: cookies through ``Storage.getCookies``; storage by evaluating, in an isolated world, in every frame
  of every open page and out-of-process frame. Visited origins no longer open are read (localStorage only) from
  a hidden background tab the same way the load writes them; their sessionStorage is gone from view and is
  reported as unchanged (the caller fills it from the base).
"""

from __future__ import annotations

import asyncio
import base64
import json
import logging
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from cdp_use.client import CDPClient

from openbrowse.profiles.jar import Cookie, Jar, normalise_cookies, origin_name, storage_items

logger = logging.getLogger(__name__)

CALL_TIMEOUT = 10.0
NAVIGATION_TIMEOUT = 10.0
WORLD_NAME = "openbrowse-profile"
_BLANK_DOCUMENT = base64.b64encode(b"<!doctype html><html><head><title></title></head><body></body></html>").decode()
_DOCUMENTS = [{"urlPattern": "*", "resourceType": "Document", "requestStage": "Request"}]
_READ_STORAGE = """(() => {
  const dump = (area) => { const out = []; for (let i = 0; i < area.length; i++) { const k = area.key(i);
    out.push([k, area.getItem(k)]); } return out; };
  let local = null, session = null;
  try { local = dump(window.localStorage); } catch (e) {}
  try { session = dump(window.sessionStorage); } catch (e) {}
  return {origin: location.origin, local, session};
})()"""


class CdpFailure(Exception):
    """The browser could not be reached or answered with an error (the message never carries jar content)."""


def web_origin(url: str) -> str | None:
    """``scheme://host[:port]`` of an http(s) URL, else None."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return None
    if parts.scheme not in {"http", "https"} or not parts.netloc:
        return None
    return f"{parts.scheme}://{parts.netloc.rsplit('@', 1)[-1].lower()}"


@dataclass
class StorageRead:
    """What the export saw: origin → name → value, per kind, and which origins each kind covers."""

    local: dict[str, dict[str, str]] = field(default_factory=dict)
    session: dict[str, dict[str, str]] = field(default_factory=dict)

    def add(self, origin: str, local: object, session: object) -> None:
        if isinstance(local, list):
            self.local[origin] = {str(k): str(v) for k, v in _pairs(local)}
        if isinstance(session, list):
            self.session.setdefault(origin, {}).update({str(k): str(v) for k, v in _pairs(session)})


def _pairs(items: list[Any]) -> Iterable[tuple[Any, Any]]:
    return ((item[0], item[1]) for item in items if isinstance(item, list) and len(item) == 2 and item[1] is not None)


def cookie_params(cookies: list[Cookie]) -> list[Cookie]:
    """Jar cookies as ``Storage.setCookies`` takes them: a session cookie (``expires`` ≤ 0) carries no expiry."""
    params = []
    for cookie in normalise_cookies(cookies):
        param = {k: v for k, v in cookie.items() if k != "sameParty"}
        expires = param.get("expires")
        if not isinstance(expires, int | float) or expires <= 0:
            param.pop("expires", None)
        if not isinstance(param.get("partitionKey"), dict | type(None)):
            param.pop("partitionKey")
        params.append(param)
    return params


class CdpLink:
    """Our DevTools connection to one browser. Owned by a ``ProfileSync``; :meth:`close` is idempotent."""

    def __init__(self, ws_url: str) -> None:
        self._client = CDPClient(ws_url)
        self._open = False
        self.visited: set[str] = set()
        self._fulfilling: set[asyncio.Task[None]] = set()

    async def open(self) -> None:
        try:
            await asyncio.wait_for(self._client.start(), CALL_TIMEOUT)  # type: ignore[no-untyped-call]
        except Exception as exc:
            raise CdpFailure("could not connect to the browser") from exc
        self._open = True
        self._client.register.Target.targetCreated(self._on_target)
        self._client.register.Target.targetInfoChanged(self._on_target)
        self._client.register.Fetch.requestPaused(self._on_request_paused)
        await self.call("Target.setDiscoverTargets", {"discover": True})

    async def close(self) -> None:
        if not self._open:
            return
        self._open = False
        for task in list(self._fulfilling):
            task.cancel()
        try:
            await asyncio.wait_for(self._client.stop(), CALL_TIMEOUT)  # type: ignore[no-untyped-call]
        except Exception:
            logger.debug("Closing the profile CDP link failed", exc_info=True)

    async def call(self, method: str, params: dict[str, Any] | None = None, session: str | None = None) -> Any:
        if not self._open:
            raise CdpFailure("the browser connection is closed")
        try:
            return await asyncio.wait_for(self._client.send_raw(method, params or {}, session), CALL_TIMEOUT)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            raise CdpFailure(f"{method} failed") from exc

    # -- events (called from cdp_use's reader: never await a command here) --------------------------------------
    def _on_target(self, event: Any, _session: str | None) -> None:
        info = event.get("targetInfo", {}) if isinstance(event, dict) else {}
        if info.get("type") in {"page", "iframe"} and (origin := web_origin(str(info.get("url", "")))):
            self.visited.add(origin)

    def _on_request_paused(self, event: Any, session: str | None) -> None:
        task = asyncio.get_running_loop().create_task(self._fulfil(str(event.get("requestId")), session))
        self._fulfilling.add(task)
        task.add_done_callback(self._fulfilling.discard)

    async def _fulfil(self, request_id: str, session: str | None) -> None:
        try:
            await self.call(
                "Fetch.fulfillRequest",
                {
                    "requestId": request_id,
                    "responseCode": 200,
                    "responseHeaders": [{"name": "Content-Type", "value": "text/html; charset=utf-8"}],
                    "body": _BLANK_DOCUMENT,
                },
                session,
            )
        except CdpFailure:
            logger.debug("Answering a profile document request failed", exc_info=True)

    # -- load --------------------------------------------------------------------------------------------------
    async def apply(self, jar: Jar) -> int:
        """Put ``jar`` into the browser before the agent starts; returns how many items could not be set."""
        failures = await self._set_cookies(cookie_params(jar.get("cookies", [])))
        origins = [o for o in jar.get("origins", []) if isinstance(o, dict) and web_origin(origin_name(o) or "")]
        if not origins:
            return failures
        target = await self._first_page()
        session = await self._attach(target)
        try:
            await self.call("Fetch.enable", {"patterns": _DOCUMENTS}, session)
            for origin in origins:
                try:
                    written = await self._write_origin(session, origin)
                except CdpFailure:
                    written = False
                failures += 0 if written else 1
        finally:
            try:  # the agent's tab must never keep answering its documents with blank pages
                await self.call("Fetch.disable", {}, session)
                await self.call("Page.navigate", {"url": "about:blank"}, session)
            finally:
                await self._detach(session)
        return failures

    async def _set_cookies(self, cookies: list[Cookie]) -> int:
        if not cookies:
            return 0
        try:
            await self.call("Storage.setCookies", {"cookies": cookies})
            return 0
        except CdpFailure:
            pass
        failures = 0
        for cookie in cookies:  # one bad cookie must not lose the others
            try:
                await self.call("Storage.setCookies", {"cookies": [cookie]})
            except CdpFailure:
                failures += 1
        return failures

    async def _write_origin(self, session: str, origin: dict[str, Any]) -> bool:
        name = web_origin(origin_name(origin) or "")
        items = [
            [kind, key, value]
            for kind in ("localStorage", "sessionStorage")
            for key, value in storage_items(origin, kind).items()
        ]
        if name is None or not items:
            return True
        if not await self._open_origin(session, name):
            return False
        script = (
            "((items) => { let failed = 0; for (const [kind, key, value] of items) { try { "
            "(kind === 'localStorage' ? localStorage : sessionStorage).setItem(key, value); } catch (e) { failed++; } }"
            f" return failed; }})({json.dumps(items)})"
        )
        result = await self.call("Runtime.evaluate", {"expression": script, "returnByValue": True}, session)
        return bool(result.get("result", {}).get("value") == 0)

    async def _open_origin(self, session: str, origin: str) -> bool:
        """Navigate the attached tab to a locally answered blank document of ``origin``."""
        await self.call("Page.navigate", {"url": f"{origin}/"}, session)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + NAVIGATION_TIMEOUT
        while loop.time() < deadline:
            try:
                result = await self.call(
                    "Runtime.evaluate",
                    {"expression": "document.readyState === 'complete' ? location.origin : ''", "returnByValue": True},
                    session,
                )
                if result.get("result", {}).get("value") == origin:
                    return True
            except CdpFailure:
                pass  # the old document went away mid-call
            await asyncio.sleep(0.05)
        return False

    # -- export ------------------------------------------------------------------------------------------------
    async def cookies(self) -> list[Cookie]:
        result = await self.call("Storage.getCookies", {})
        return normalise_cookies(result.get("cookies", []))

    async def read_open_frames(self) -> StorageRead:
        """localStorage and sessionStorage of every frame of every open page and out-of-process frame."""
        read = StorageRead()
        targets = (await self.call("Target.getTargets", {})).get("targetInfos", [])
        for info in targets:
            if info.get("type") not in {"page", "iframe"}:
                continue
            try:
                session = await self._attach(str(info["targetId"]))
            except CdpFailure:
                continue
            try:
                await self._read_frames(session, read)
            finally:
                await self._detach(session)
        return read

    async def _read_frames(self, session: str, read: StorageRead) -> None:
        try:
            tree = (await self.call("Page.getFrameTree", {}, session)).get("frameTree", {})
        except CdpFailure:
            return
        for frame in _frames(tree):
            if not web_origin(str(frame.get("url", ""))) and not web_origin(str(frame.get("securityOrigin", ""))):
                continue
            try:
                world = await self.call(
                    "Page.createIsolatedWorld", {"frameId": frame["id"], "worldName": WORLD_NAME}, session
                )
                result = await self.call(
                    "Runtime.evaluate",
                    {"expression": _READ_STORAGE, "contextId": world["executionContextId"], "returnByValue": True},
                    session,
                )
            except (CdpFailure, KeyError):
                continue
            value = result.get("result", {}).get("value")
            if isinstance(value, dict) and (origin := web_origin(str(value.get("origin", "")))):
                read.add(origin, value.get("local"), value.get("session"))

    async def read_local_storage(self, origins: Iterable[str], read: StorageRead) -> None:
        """Read localStorage of origins no open frame shows, from a hidden background tab."""
        wanted = sorted(set(origins) - read.local.keys())
        if not wanted:
            return
        created = await self.call("Target.createTarget", {"url": "about:blank", "background": True})
        target = str(created["targetId"])
        try:
            session = await self._attach(target)
            await self.call("Fetch.enable", {"patterns": _DOCUMENTS}, session)
            for origin in wanted:
                if not await self._open_origin(session, origin):
                    continue
                result = await self.call(
                    "Runtime.evaluate", {"expression": _READ_STORAGE, "returnByValue": True}, session
                )
                value = result.get("result", {}).get("value")
                if isinstance(value, dict) and value.get("origin") == origin:
                    read.add(origin, value.get("local"), None)
        finally:
            try:
                await self.call("Target.closeTarget", {"targetId": target})
            except CdpFailure:
                logger.debug("Closing the hidden profile tab failed", exc_info=True)

    # -- targets -----------------------------------------------------------------------------------------------
    async def _first_page(self) -> str:
        targets = (await self.call("Target.getTargets", {})).get("targetInfos", [])
        pages = [t for t in targets if t.get("type") == "page"]
        if pages:
            return str(pages[0]["targetId"])
        created = await self.call("Target.createTarget", {"url": "about:blank"})
        return str(created["targetId"])

    async def _attach(self, target_id: str) -> str:
        attached = await self.call("Target.attachToTarget", {"targetId": target_id, "flatten": True})
        return str(attached["sessionId"])

    async def _detach(self, session: str) -> None:
        try:
            await self.call("Target.detachFromTarget", {"sessionId": session})
        except CdpFailure:
            logger.debug("Detaching the profile CDP session failed", exc_info=True)


def _frames(tree: dict[str, Any]) -> list[dict[str, Any]]:
    frames = []
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node.get("frame"), dict):
            frames.append(node["frame"])
        stack.extend(child for child in node.get("childFrames", []) if isinstance(child, dict))
    return frames
