"""ControlEngine: Playwright attached over CDP to one live browser (spec §20.1).

Interface used by the other control modules:

* ``await engine.attach()`` — idempotent; connects ``connect_over_cdp(target.cdp_url)`` on first use, points the
  browser's downloads at ``target.folders.downloads`` and calls :func:`openbrowse.control.page_log.watch` for every
  page it sees (existing and new).
* ``await engine.aclose()`` — detaches (never closes the default context or tabs it did not open).
* ``engine.target`` — the :class:`~openbrowse.control.target.ControlTarget`.
* ``engine.context`` — the browser's default ``BrowserContext``.
* ``await engine.page(target_id)`` — the ``Page`` for a targetId / tabId (``t1``) / label / unique raw-id prefix,
  or the active tab when ``None``; raises ``TAB_NOT_FOUND``.
* ``await engine.target_id_of(page)`` — its CDP target id.
* ``engine.state(page)`` — its :class:`~openbrowse.control.tab_state.TabState`.
* ``await engine.locator(page, ref)`` — the ``Locator`` for a ref of the tab's last snapshot; ``REF_STALE`` when
  unknown or from an older document or snapshot.
* ``await engine.browser_cdp()`` — a browser-level ``CDPSession`` (downloads, permissions).
* ``await engine.check_url(url)`` — only ``http(s)`` and ``about:blank``, and the network policy (§19.2):
  ``NAVIGATION_BLOCKED`` (403) otherwise.

Beyond the contract: ``engine.pages`` (the tabs in the order first seen), ``engine.attached``, ``engine.focus(page)``
(make a tab the active one) and ``await engine.tab_info(page)`` (the wire shape of a tab). ``TabState.document`` is
bumped here, on every committed main-frame navigation to a new document (same-document navigations keep refs).
"""

from __future__ import annotations

import asyncio
import contextlib
import re
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from playwright.async_api import Browser, BrowserContext, CDPSession, Locator, Page, Playwright, async_playwright

from openbrowse.control import page_log
from openbrowse.control.errors import ControlError, browser_not_live, ref_stale, tab_not_found
from openbrowse.control.refs import REF_MARKER_ATTRIBUTE, normalize_ref
from openbrowse.control.tab_state import RefTarget, TabState
from openbrowse.network.refusal import NetworkRefused

if TYPE_CHECKING:
    from openbrowse.control.target import ControlTarget

__all__ = ["ControlEngine"]

_NO_NAME = re.compile(r"^$")


def _playwright_unavailable(reason: object) -> ControlError:
    return ControlError(501, f"Playwright could not be started: {reason}", "PLAYWRIGHT_UNAVAILABLE")


class ControlEngine:
    """Playwright on one browser's default context; every page it sees gets a :class:`TabState`."""

    def __init__(self, target: ControlTarget) -> None:
        self.target = target
        self._attach_lock = asyncio.Lock()
        self._playwright: Playwright | None = None
        self._browser: Browser | None = None
        self._context: BrowserContext | None = None
        self._browser_session: CDPSession | None = None
        self._states: dict[Page, TabState] = {}
        self._order: list[Page] = []
        self._target_ids: dict[Page, str] = {}
        self._active: Page | None = None
        self._tabs_seen = 0
        self._closed = False
        self._background: set[asyncio.Task[None]] = set()

    # -- lifecycle -------------------------------------------------------------------------------------------------

    @property
    def attached(self) -> bool:
        return self._browser is not None and self._browser.is_connected()

    async def attach(self) -> None:
        if self.attached:
            return
        async with self._attach_lock:
            if self.attached:
                return
            if self._closed:
                raise browser_not_live()
            await self._detach()  # a previous connection that dropped
            try:
                self._playwright = await async_playwright().start()
            except Exception as exc:  # the driver is missing or cannot run
                raise _playwright_unavailable(exc) from exc
            try:
                browser = await self._playwright.chromium.connect_over_cdp(self.target.cdp_url, timeout=15_000)
            except Exception as exc:
                await self._detach()
                raise ControlError(
                    409, f"The browser's DevTools endpoint did not answer: {exc}", "browser_not_live"
                ) from exc
            self._browser = browser
            # Playwright's own connect points downloads at a host temp dir the sandboxed browser cannot write.
            self._browser_session = await browser.new_browser_cdp_session()
            await self._browser_session.send(
                "Browser.setDownloadBehavior",
                {"behavior": "allow", "downloadPath": str(self.target.folders.downloads), "eventsEnabled": True},
            )
            context = browser.contexts[0] if browser.contexts else await browser.new_context()
            self._context = context
            context.on("page", self._adopt)
            for page in context.pages:
                self._adopt(page)

    async def aclose(self) -> None:
        """Detach (idempotent); the browser, its default context and its tabs stay as they are."""
        self._closed = True
        await asyncio.shield(self._detach())

    async def _detach(self) -> None:
        browser, playwright = self._browser, self._playwright
        self._browser = self._playwright = None
        self._context = self._browser_session = None
        self._states.clear()
        self._order.clear()
        self._target_ids.clear()
        self._active = None
        if browser is not None:
            with contextlib.suppress(Exception):  # for connect_over_cdp, close() only disconnects
                await browser.close()
        if playwright is not None:
            with contextlib.suppress(Exception):
                await playwright.stop()

    # -- pages -----------------------------------------------------------------------------------------------------

    def _adopt(self, page: Page) -> None:
        if page in self._states:
            return
        self._tabs_seen += 1
        state = TabState(tab_id=f"t{self._tabs_seen}")
        self._states[page] = state
        self._order.append(page)
        page.on("close", self._forget)
        self._watch_documents(page, state)
        page_log.watch(page, state)
        # learnt now, before a dialog can block the page's CDP sessions
        task = asyncio.get_running_loop().create_task(self._learn_target_id(page))
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    @staticmethod
    def _watch_documents(page: Page, state: TabState) -> None:
        """Bump ``state.document`` on every committed main-frame navigation to a new document."""
        emitter = getattr(getattr(page.main_frame, "_impl_obj", None), "_event_emitter", None)
        if emitter is not None:
            # The protocol's navigated event says whether the document changed; framenavigated does not.
            def on_navigated(event: dict[str, Any]) -> None:
                if event.get("newDocument") is not None and not event.get("error"):
                    state.document += 1

            emitter.on("navigated", on_navigated)
            return

        def on_frame_navigated(frame: Any) -> None:
            if frame == page.main_frame:
                state.document += 1

        page.on("framenavigated", on_frame_navigated)

    def _detach_later(self, session: CDPSession) -> None:
        """Detach a page's CDP session without waiting: while the page shows a dialog, Chromium answers the
        detach only once the dialog is gone, and no route may hang on that."""

        async def detach() -> None:
            with contextlib.suppress(Exception):
                await session.detach()

        task = asyncio.get_running_loop().create_task(detach())
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def _learn_target_id(self, page: Page) -> None:
        with contextlib.suppress(Exception):  # best effort: target_id_of asks again if this did not finish
            await self.target_id_of(page)

    def _forget(self, page: Page) -> None:
        self._states.pop(page, None)
        self._target_ids.pop(page, None)
        if page in self._order:
            self._order.remove(page)
        if self._active is page:
            self._active = None

    @property
    def playwright(self) -> Playwright:
        """The driver this engine attached with (device presets live on it)."""
        if self._playwright is None:
            raise browser_not_live()
        return self._playwright

    @property
    def context(self) -> BrowserContext:
        if self._context is None:
            raise browser_not_live()
        return self._context

    @property
    def pages(self) -> list[Page]:
        """Open tabs in the order first seen."""
        return [page for page in self._order if not page.is_closed()]

    def state(self, page: Page) -> TabState:
        state = self._states.get(page)
        if state is None:
            self._adopt(page)
            state = self._states[page]
        return state

    def focus(self, page: Page) -> None:
        """Make ``page`` the active tab (the one calls without a targetId act on)."""
        self.state(page)
        self._active = page

    def active_page(self) -> Page | None:
        if self._active is not None and not self._active.is_closed():
            return self._active
        pages = self.pages
        return pages[-1] if pages else None

    async def target_id_of(self, page: Page) -> str:
        cached = self._target_ids.get(page)
        if cached is not None:
            return cached
        session = await self.context.new_cdp_session(page)
        try:
            info = await session.send("Target.getTargetInfo")
        finally:
            self._detach_later(session)
        target_id = str(info["targetInfo"]["targetId"])
        if not page.is_closed():
            self._target_ids[page] = target_id
        return target_id

    async def page(self, target_id: str | None = None) -> Page:
        await self.attach()
        if target_id is None or target_id == "":
            page = self.active_page()
            if page is None:
                raise ControlError(404, "The browser has no open tab.", "TAB_NOT_FOUND")
            return page
        pages = self.pages
        for page in pages:
            state = self.state(page)
            if target_id in (state.tab_id, state.label):
                return page
        raw_ids = [(page, await self.target_id_of(page)) for page in pages]
        for page, raw in raw_ids:
            if raw == target_id or raw.lower() == target_id.lower():
                return page
        prefixed = [page for page, raw in raw_ids if raw.lower().startswith(target_id.lower())]
        if len(prefixed) == 1:
            return prefixed[0]
        if len(prefixed) > 1:
            raise ControlError(409, f"More than one tab matches {target_id!r}; use a longer id.", "TAB_AMBIGUOUS")
        raise tab_not_found(target_id)

    async def tab_info(self, page: Page) -> dict[str, Any]:
        """A tab as the wire shows it: ``{targetId, tabId, suggestedTargetId, label?, title, url, type}``."""
        state = self.state(page)
        info: dict[str, Any] = {
            "targetId": await self.target_id_of(page),
            "tabId": state.tab_id,
            "suggestedTargetId": state.label or state.tab_id,
        }
        if state.label:
            info["label"] = state.label
        try:
            title = await page.title()
        except Exception:  # the page is navigating or closing
            title = ""
        info.update({"title": title, "url": page.url, "type": "page"})
        return info

    async def browser_cdp(self) -> CDPSession:
        await self.attach()
        if self._browser_session is None:
            raise browser_not_live()
        return self._browser_session

    # -- refs and URLs ---------------------------------------------------------------------------------------------

    def ref_target(self, page: Page, ref: str) -> tuple[str, RefTarget]:
        """The stored target of ``ref`` (normalised) in the tab's last snapshot, or ``REF_STALE``."""
        state = self.state(page)
        key = normalize_ref(ref)
        if not key:
            raise ControlError(400, "ref is required", "ACT_INVALID_REQUEST")
        found = state.refs.get(key)
        if found is None and key.isdigit():
            key = f"e{key}"
            found = state.refs.get(key)
        if found is None or state.refs_document != state.document:
            raise ref_stale(ref)
        return key, found

    async def locator(self, page: Page, ref: str) -> Locator:
        key, found = self.ref_target(page, ref)
        if found.kind == "aria":
            return page.locator(f"aria-ref={found.aria_ref or key}")
        if found.kind == "ax":
            return await self._marked_locator(page, key, found)
        scope: Any = page.frame_locator(found.frame) if found.frame else page
        if found.selector:
            scope = scope.locator(found.selector).first
        # An unnamed element must not match its named siblings, or nth would count them too.
        name: str | re.Pattern[str] = found.name or _NO_NAME
        located: Locator = scope.get_by_role(found.role, name=name, exact=True)
        return located.nth(found.nth) if found.nth is not None else located

    async def _marked_locator(self, page: Page, key: str, found: RefTarget) -> Locator:
        """An ``axN`` ref: mark its backend DOM node with an attribute so Playwright can find it."""
        session = await self.context.new_cdp_session(page)
        try:
            await session.send("DOM.getDocument", {"depth": 0})
            pushed = await session.send(
                "DOM.pushNodesByBackendIdsToFrontend", {"backendNodeIds": [found.backend_node_id]}
            )
            node_ids = pushed.get("nodeIds") or [0]
            if not node_ids[0]:
                raise ref_stale(key)
            await session.send(
                "DOM.setAttributeValue", {"nodeId": node_ids[0], "name": REF_MARKER_ATTRIBUTE, "value": key}
            )
        except ControlError:
            raise
        except Exception as exc:  # the node left the document
            raise ref_stale(key) from exc
        finally:
            self._detach_later(session)
        return page.locator(f'[{REF_MARKER_ATTRIBUTE}="{key}"]')

    async def check_url(self, url: str) -> None:
        """Refuse what this API may not open: other schemes, and what the network policy refuses (§19.2)."""
        scheme = urlsplit(url).scheme.lower()
        if url != "about:blank" and scheme not in {"http", "https"}:
            raise ControlError(400, "Only http(s) and about:blank may be opened", "ACT_INVALID_REQUEST")
        if self.target.rules is None or url == "about:blank":
            return
        try:
            await self.target.rules.check(url)
        except NetworkRefused as exc:
            raise ControlError(403, str(exc), "NAVIGATION_BLOCKED") from exc
