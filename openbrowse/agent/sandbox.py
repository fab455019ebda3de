"""The namespace ``run_code_file`` scripts run in (spec §11.3): helpers bound to this session's browser, file
area, clipboard and network policy.

Scripts run in-process, with top-level ``await``, in one namespace that persists across calls. ``print`` writes
to the call's own buffer (never the process's stdout, which other sessions share); ``open`` and the JSON helpers
resolve names inside the session's file area and refuse paths that leave it; ``fetch`` goes through the network
policy like ``http_fetch``; ``asyncio.run(coro)`` schedules the coroutine and the runner awaits it before the
call ends (a nested event loop cannot run inside the agent's).
"""

from __future__ import annotations

import asyncio
import builtins
import io
import json
import re
import types
from collections.abc import Coroutine
from pathlib import Path
from typing import TYPE_CHECKING, Any

from browser_use import BrowserSession

from openbrowse.agent.browser_pages import FrameRef, evaluate, evaluate_in_frame, frames_of
from openbrowse.agent.netpolicy import NetworkRefused, NetworkRules
from openbrowse.agent.page_scripts import READ_PAGE
from openbrowse.agent.safe_fetch import FetchFailed, fetch
from openbrowse.agent.steps import CATEGORIES
from openbrowse.agent.tools.clipboard import Clipboard

if TYPE_CHECKING:
    from openbrowse.agent.answer_store import AnswerStore

FRAME_WAIT = 15.0


class SandboxBrowser:
    """``browser`` inside scripts: the agent's focused tab and its embedded (cross-origin) frames."""

    def __init__(self, session: BrowserSession) -> None:
        self._session = session

    async def evaluate(self, js: str) -> Any:
        return await evaluate(self._session, js)

    async def html(self) -> Any:
        return await evaluate(self._session, "document.documentElement.outerHTML")

    async def url(self) -> str:
        return await self._session.get_current_page_url()

    async def navigate(self, url: str) -> None:
        await self._session.navigate_to(url)

    async def frames(self) -> list[dict[str, Any]]:
        return [{"url": f.url, "crossOrigin": f.cross_origin} for f in await frames_of(self._session)]

    async def _frame(self, needle: str) -> FrameRef:
        frames = [f for f in await frames_of(self._session) if needle in f.url]
        if not frames:
            raise LookupError(f"no embedded frame whose URL contains {needle!r}; try await browser.wait_for_frame()")
        return frames[0]

    async def wait_for_frame(self, needle: str, timeout: float = FRAME_WAIT) -> dict[str, Any]:  # noqa: ASYNC109
        deadline = asyncio.get_running_loop().time() + timeout
        while True:
            try:
                frame = await self._frame(needle)
                return {"url": frame.url, "crossOrigin": frame.cross_origin}
            except LookupError:
                if asyncio.get_running_loop().time() > deadline:
                    raise
                await asyncio.sleep(0.3)

    async def frame_evaluate(self, needle: str, js: str) -> Any:
        return await evaluate_in_frame(self._session, await self._frame(needle), js)

    async def frame_text(self, needle: str) -> str:
        page = await self.frame_evaluate(needle, READ_PAGE)
        return str(page.get("text", "")) if isinstance(page, dict) else ""

    async def frame_jsonld(self, needle: str) -> list[Any]:
        page = await self.frame_evaluate(needle, READ_PAGE)
        return list(page.get("jsonld", [])) if isinstance(page, dict) else []


def pick_jsonld(blocks: list[Any], type_name: str) -> list[dict[str, Any]]:
    """Every JSON-LD object (top level, lists and ``@graph`` included) whose ``@type`` is ``type_name``."""
    found: list[dict[str, Any]] = []
    stack = list(blocks)
    while stack:
        item = stack.pop(0)
        if isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, dict):
            kind = item.get("@type")
            if kind == type_name or (isinstance(kind, list) and type_name in kind):
                found.append(item)
            stack.extend(v for k, v in item.items() if k == "@graph" or isinstance(v, dict | list))
    return found


STORE_HELPERS = (*sorted(CATEGORIES["schema"]), "coverage")
"""The answer store's operations a script can call, with the store's own validation (spec §11.3)."""


class Sandbox:
    """One session's persistent namespace plus the per-call output buffer and pending ``asyncio.run`` tasks."""

    def __init__(
        self,
        files_dir: Path,
        browser: BrowserSession,
        clipboard: Clipboard,
        network: NetworkRules,
        store: AnswerStore | None = None,
    ) -> None:
        self.files_dir = files_dir
        self.network = network
        self.stdout = io.StringIO()
        self.pending: list[asyncio.Future[Any]] = []
        self.namespace: dict[str, Any] = {
            "__name__": "__sandbox__",
            "browser": SandboxBrowser(browser),
            "fetch": self.fetch,
            "save_json": self.save_json,
            "read_json": self.read_json,
            "open": self.open,
            "print": self.print,
            "pick_jsonld": pick_jsonld,
            "remember": clipboard.remember,
            "recall": clipboard.recall,
            "json": json,
            "re": re,
            "asyncio": self._asyncio_shim(),
        }
        if store is not None:
            self.namespace.update({name: getattr(store, name) for name in STORE_HELPERS})

    def _asyncio_shim(self) -> types.SimpleNamespace:
        shim = types.SimpleNamespace(**{name: getattr(asyncio, name) for name in asyncio.__all__})
        shim.run = self.schedule
        return shim

    def schedule(self, coro: Coroutine[Any, Any, Any], **_: Any) -> None:
        self.pending.append(asyncio.ensure_future(coro))

    def print(self, *values: Any, sep: str | None = " ", end: str | None = "\n", **_: Any) -> None:
        self.stdout.write((sep if sep is not None else " ").join(str(v) for v in values))
        self.stdout.write(end if end is not None else "\n")

    def path(self, name: str | Path) -> Path:
        resolved = (self.files_dir / name).resolve()
        if not resolved.is_relative_to(self.files_dir.resolve()):
            raise PermissionError(f"{name} is outside the session's file area")
        return resolved

    def open(self, name: str | Path, mode: str = "r", *args: Any, **kwargs: Any) -> Any:
        target = self.path(name)
        if any(flag in mode for flag in "wax+"):
            target.parent.mkdir(parents=True, exist_ok=True)
        return builtins.open(target, mode, *args, **kwargs)

    def save_json(self, name: str, value: Any) -> str:
        target = self.path(name)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(value, ensure_ascii=False, indent=1), "utf-8")
        return target.name

    def read_json(self, name: str) -> Any:
        return json.loads(self.path(name).read_text("utf-8"))

    async def fetch(
        self, url: str, method: str = "GET", headers: dict[str, str] | None = None, body: str | None = None
    ) -> dict[str, Any]:
        """Server-side HTTP under the network policy: ``{url, status, headers, text, json}``; raises on refusal."""
        try:
            response = await fetch(self.network, url, method=method, headers=headers, body=body)
        except NetworkRefused as exc:
            raise PermissionError(str(exc)) from exc
        except FetchFailed as exc:
            raise ConnectionError(str(exc)) from exc
        text = response.text()
        try:
            parsed = json.loads(text) if response.content_type.endswith("json") else None
        except ValueError:
            parsed = None
        return {
            "url": response.url,
            "status": response.status,
            "headers": response.headers,
            "text": text,
            "json": parsed,
        }
