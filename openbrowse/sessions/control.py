"""ControlService: who may drive which browser through the control API, and with what (spec §20.1, §20.3).

Every control call names a session or a raw browser. The service finds its live slot, keeps one
:class:`~openbrowse.control.engine.ControlEngine` per browser (attached on first use, detached before the browser
goes away), and serialises the calls that change the page: one driver at a time per browser, shared with the
agent's steps.

* A raw browser may always be driven while it is live.
* A session may be read while its browser is up, and driven only while it is parked for a follow-up; while a step
  runs, a mutating call gets 409 ``session_busy``. A follow-up that arrives during a control call waits for it
  (:meth:`hand_back`), and its turn starts with one note listing what was done by hand.
* Every mutating call on a session writes a ``control`` feed event (route and kind; typed text omitted).
"""

from __future__ import annotations

import asyncio
import importlib
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import quote

from openbrowse.config import Settings
from openbrowse.control.call import ControlCall, ControlRoute
from openbrowse.control.errors import ControlError, browser_not_live, operation_failed, session_busy
from openbrowse.control.target import AskModel, ControlTarget, FileUrl
from openbrowse.domain.browser_folders import BrowserFolders
from openbrowse.domain.feed import EventCategory, FeedEntry, clip
from openbrowse.domain.ids import SessionId
from openbrowse.errors import BrowserUnavailable, InvalidRequest
from openbrowse.network.policy import NetworkRules
from openbrowse.sessions.browsers import BrowserService
from openbrowse.sessions.manager import SessionManager
from openbrowse.shielding import run_shielded
from openbrowse.store.feed import FeedRepo

if TYPE_CHECKING:
    from openbrowse.control.engine import ControlEngine

__all__ = ["ControlService", "TargetKind", "describe_call", "files_route"]

logger = logging.getLogger(__name__)

TargetKind = Literal["session", "browser"]
_NOTE_LIMIT = 20  # actions listed in the hand-back note; the rest are counted
ENGINE_MODULE = "openbrowse.control.engine"
_TEXT_KINDS = frozenset({"type", "insertText", "fill", "evaluate"})


@dataclass(slots=True)
class _Driven:
    """One browser under control: its engine, the slot it is attached to, and what was done by hand."""

    engine: ControlEngine
    cdp_url: str
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    by_hand: list[str] = field(default_factory=list)


def describe_call(route: ControlRoute, body: Mapping[str, Any], path: Mapping[str, str]) -> str:
    """One line for the feed and the hand-back note: the route and kind, never typed text or scripts."""
    name = route.path.format(**path) if path else route.path
    kind = body.get("kind")
    if not isinstance(kind, str):
        action = body.get("action")
        kind = action if isinstance(action, str) else ""
    words = [f"{route.method} {name}", kind]
    if kind == "batch" and isinstance(body.get("actions"), list):
        kinds = [a.get("kind") for a in body["actions"] if isinstance(a, dict) and isinstance(a.get("kind"), str)]
        words.append(f"({len(body['actions'])} actions: {', '.join(dict.fromkeys(str(k) for k in kinds))})")
    elif kind not in _TEXT_KINDS:
        for key in ("ref", "url", "key", "targetId"):
            value = body.get(key)
            if isinstance(value, str) and value:
                words.append(f"{key}={clip(value, 120)}")
                break
    return " ".join(word for word in words if word)


def files_route(kind: TargetKind, target_id: str) -> FileUrl:
    """The plain files route (spec §22.3) of a file in the target's file area."""
    owner = f"/v3/{kind}s/{quote(target_id, safe='')}/files"
    return lambda area, name: f"{owner}/{area}/{quote(name, safe='')}"


async def _served(route: ControlRoute, call: ControlCall) -> dict[str, Any]:
    """The handler's answer; a Playwright failure the handler did not name is still a typed 422, never a 500."""
    from playwright.async_api import Error as PlaywrightError  # loaded with the handler's module

    try:
        return await route.handler(call)
    except PlaywrightError as exc:
        first_line = (exc.message or str(exc)).strip().splitlines()[0] if str(exc).strip() else "Playwright failed"
        raise operation_failed(clip(first_line, 300)) from exc


class ControlService:
    """Resolves control calls to engines and decides who may drive. Enter after the manager and the browser service;
    close before them (detaches every engine)."""

    def __init__(self, settings: Settings, manager: SessionManager, browsers: BrowserService, feed: FeedRepo) -> None:
        self._settings = settings
        self._manager = manager
        self._browsers = browsers
        self._feed = feed
        self._rules = NetworkRules.from_settings(settings)
        self._driven: dict[str, _Driven] = {}
        self._starting = asyncio.Lock()

    async def __aenter__(self) -> ControlService:
        self._browsers.before_end = self.browser_closing
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        driven, self._driven = list(self._driven.values()), {}
        for item in driven:
            await run_shielded(self._detach(item))

    # -- calls -------------------------------------------------------------------------------------------------
    async def call(
        self,
        kind: TargetKind,
        target_id: str,
        route: ControlRoute,
        query: Mapping[str, str],
        body: dict[str, Any],
        path: Mapping[str, str],
        signed_url: FileUrl | None = None,
    ) -> dict[str, Any]:
        """Serve one control call on a session's or raw browser's browser; files it makes are answered with
        ``signed_url`` when given, else with their plain files route."""
        target = await self._resolve(kind, target_id, mutating=route.mutating)
        driven = await self._engine_for(target_id, target)
        call = ControlCall(engine=driven.engine, query=query, body=body, path=path, signed_url=signed_url)
        if kind == "browser":  # a control call is use: the browser's idle clock starts again after it (§21.1)
            self._browsers.touch(target_id)
            try:
                return await self._call(kind, target_id, driven, route, call)
            finally:
                self._browsers.touch(target_id)
        return await self._call(kind, target_id, driven, route, call)

    async def _call(
        self, kind: TargetKind, target_id: str, driven: _Driven, route: ControlRoute, call: ControlCall
    ) -> dict[str, Any]:
        body, path = call.body, call.path
        if not route.mutating:
            result = await _served(route, call)
            if route.path == "" and kind == "session":  # the status says whether a driver would be refused now
                worker = self._manager.worker(SessionId(target_id))
                if worker is None or not worker.may_be_driven:
                    result.update(controllable=False, reason=session_busy().message)
            return result
        async with driven.lock:
            if kind == "session":  # re-checked under the lock: a follow-up may have taken the session meanwhile
                await self._resolve(kind, target_id, mutating=True)
            result = await _served(route, call)
            if kind == "session":
                self._manager.human_input(target_id)  # a paused session's timeout counts from the last input
                line = describe_call(route, body, path)
                driven.by_hand.append(line)
                await self._feed.append(
                    SessionId(target_id),
                    FeedEntry.event(EventCategory.CONTROL, route.path.strip("/") or "status", f"By hand: {line}"),
                )
            return result

    async def _resolve(self, kind: TargetKind, target_id: str, *, mutating: bool) -> ControlTarget:
        if kind == "browser":
            return await self._browser_target(target_id)
        return await self._session_target(target_id, mutating=mutating)

    async def _browser_target(self, browser_id: str) -> ControlTarget:
        try:
            endpoint = await self._browsers.cdp_endpoint(browser_id)
        except (InvalidRequest, BrowserUnavailable) as exc:
            raise browser_not_live() from exc
        files = self._browsers.files_dir(browser_id)
        return self._target(endpoint.http_url, endpoint.folders, files, files_route("browser", browser_id))

    async def _session_target(self, session_id: str, *, mutating: bool) -> ControlTarget:
        record = await self._manager.get(session_id)  # SessionNotFound → 404
        worker = self._manager.worker(record.id)
        slot = worker.control_slot() if worker is not None else None
        if worker is None or slot is None:
            raise browser_not_live()
        if mutating and not worker.may_be_driven:
            raise session_busy()
        folders = BrowserFolders(uploads=slot.uploads_dir, downloads=slot.downloads_dir)
        files = self._settings.sessions_dir / record.id
        return self._target(slot.cdp_url, folders, files, files_route("session", record.id), model=record.llm_model)

    def _target(
        self, cdp_url: str, folders: BrowserFolders, files: Path, file_url: FileUrl, *, model: str | None = None
    ) -> ControlTarget:
        return ControlTarget(
            cdp_url=cdp_url,
            folders=folders,
            files_dir=files,
            file_url=file_url,
            rules=self._rules,
            evaluate_enabled=self._settings.CONTROL_EVALUATE,
            ask_model=self._ask_model(model),
        )

    async def _engine_for(self, target_id: str, target: ControlTarget) -> _Driven:
        async with self._starting:
            driven = self._driven.get(target_id)
            if driven is not None and driven.cdp_url != target.cdp_url:  # a new slot since: the old one is gone
                del self._driven[target_id]
                await run_shielded(self._detach(driven))
                driven = None
            if driven is None:
                await asyncio.to_thread(target.files_dir.mkdir, mode=0o700, parents=True, exist_ok=True)
                # the engine (and Playwright) load on the control API's first use, on a thread
                engines = await asyncio.to_thread(importlib.import_module, ENGINE_MODULE)
                driven = self._driven[target_id] = _Driven(engines.ControlEngine(target), target.cdp_url)
            return driven

    # -- hooks from the session and browser lifecycles -----------------------------------------------------------
    async def handed_back(self, session_id: SessionId) -> list[str]:
        """Wait for a control call in flight, then take what was done by hand since the last turn or resume."""
        driven = self._driven.get(session_id)
        if driven is None:
            return []
        async with driven.lock:
            done, driven.by_hand = driven.by_hand, []
        return done

    async def hand_back(self, session_id: SessionId, task: str) -> str:
        """Wait for a control call in flight, then prefix ``task`` with what was done by hand since the last turn."""
        done = await self.handed_back(session_id)
        if not done:
            return task
        listed = "; ".join(done[:_NOTE_LIMIT])
        more = f"; and {len(done) - _NOTE_LIMIT} more" if len(done) > _NOTE_LIMIT else ""
        note = (
            "Note: while you were waiting, a person drove this browser by hand through the control API "
            f"({listed}{more}). The browser is now as they left it; look at the current page before acting."
        )
        return f"{note}\n\n{task}"

    async def browser_closing(self, target_id: str) -> None:
        driven = self._driven.pop(target_id, None)
        if driven is not None:
            await run_shielded(self._detach(driven))

    @staticmethod
    async def _detach(driven: _Driven) -> None:
        try:
            await driven.engine.aclose()
        except Exception:
            logger.exception("Detaching the control engine failed")

    # -- the extract model -----------------------------------------------------------------------------------------
    def _ask_model(self, model: str | None) -> AskModel:
        """One plain model call on the session's model; raw browsers use the server's default model."""
        settings = self._settings

        async def ask(prompt: str) -> str:
            # browser-use's message types load with the engine, off the import path of the API
            from browser_use.llm.messages import UserMessage

            from openbrowse.llm.catalog import resolve_model
            from openbrowse.llm.factory import build_chat_model

            try:
                resolved = resolve_model(
                    model,
                    default_model=settings.DEFAULT_MODEL,
                    has_openai_key=bool(settings.OPENAI_API_KEY),
                    has_anthropic_key=bool(settings.ANTHROPIC_API_KEY),
                )
                llm = build_chat_model(resolved, "default", settings, max_tokens=4000)
            except InvalidRequest as exc:
                raise ControlError(501, exc.message, "MODEL_UNAVAILABLE") from exc
            reply = await llm.ainvoke([UserMessage(content=prompt)])
            return reply.completion if isinstance(reply.completion, str) else str(reply.completion)

        return ask
