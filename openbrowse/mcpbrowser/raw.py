"""The browser tools on a raw browser (``browserId``, spec §23.3): Playwright attached to its default context.

One connection per raw browser, made on first use and kept while the browser's DevTools endpoint stays the same;
a browser that went away (stopped, timed out, restarted on a new slot) is reconnected or refused on the next call.
Closing detaches only: the raw browser, its context and its tabs belong to whoever started it.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

from playwright.async_api import Browser, Playwright, async_playwright

from openbrowse.mcpbrowser.pages import OwnerPages, ToolFailure
from openbrowse.network.policy import NetworkRules
from openbrowse.shielding import run_shielded

__all__ = ["RawBrowsers", "RawTarget", "ResolveRaw"]

CONNECT_TIMEOUT_MS = 15_000


@dataclass(frozen=True, slots=True)
class RawTarget:
    """Where a live raw browser's DevTools endpoint is (loopback), and its own file area."""

    cdp_url: str
    files_dir: Path


ResolveRaw = Callable[[str], Awaitable[RawTarget]]
"""A raw browser's target by id; raises :class:`ToolFailure` for an unknown or stopped browser."""


@dataclass(slots=True)
class _Attached:
    cdp_url: str
    browser: Browser
    pages: OwnerPages


class RawBrowsers:
    def __init__(self, resolve: ResolveRaw, *, rules: NetworkRules | None, evaluate_enabled: bool) -> None:
        self._resolve = resolve
        self._rules = rules
        self._evaluate_enabled = evaluate_enabled
        self._playwright: Playwright | None = None
        self._attached: dict[str, _Attached] = {}
        self._lock = asyncio.Lock()
        self._closed = False

    async def pages(self, browser_id: str) -> OwnerPages:
        try:
            target = await self._resolve(browser_id)
        except ToolFailure:
            await self._forget(browser_id)  # it ended: drop the connection we kept to it
            raise
        async with self._lock:
            if self._closed:
                raise ToolFailure("The browser tools are shut down.")
            attached = self._attached.get(browser_id)
            if attached is not None and (attached.cdp_url != target.cdp_url or not attached.browser.is_connected()):
                del self._attached[browser_id]
                await run_shielded(self._detach(attached))
                attached = None
            if attached is None:
                attached = self._attached[browser_id] = await self._attach(target)
            return attached.pages

    async def _attach(self, target: RawTarget) -> _Attached:
        if self._playwright is None:
            self._playwright = await async_playwright().start()
        try:
            browser = await self._playwright.chromium.connect_over_cdp(target.cdp_url, timeout=CONNECT_TIMEOUT_MS)
        except Exception as exc:
            raise ToolFailure(f"The browser's DevTools endpoint did not answer: {exc}") from exc
        context = browser.contexts[0] if browser.contexts else await browser.new_context()
        pages = OwnerPages(
            context,
            files_dir=target.files_dir,
            rules=self._rules,
            evaluate_enabled=self._evaluate_enabled,
            owns_context=False,
        )
        return _Attached(target.cdp_url, browser, pages)

    async def _forget(self, browser_id: str) -> None:
        async with self._lock:
            attached = self._attached.pop(browser_id, None)
            if attached is not None:
                await run_shielded(self._detach(attached))

    @staticmethod
    async def _detach(attached: _Attached) -> None:
        await attached.pages.aclose()
        with contextlib.suppress(Exception):  # over CDP, close() only disconnects
            await attached.browser.close()

    async def aclose(self) -> None:
        await run_shielded(self._close())

    async def _close(self) -> None:
        async with self._lock:
            self._closed = True
            attached, self._attached = list(self._attached.values()), {}
            for item in attached:
                await self._detach(item)
            playwright, self._playwright = self._playwright, None
            if playwright is not None:
                with contextlib.suppress(Exception):
                    await playwright.stop()
