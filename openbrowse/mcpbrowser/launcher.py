"""The shared browser's real launch (spec §23.3): a slot's sandboxed Chromium, driven by Playwright over CDP.

The shared browser is a :class:`~openbrowse.slots.slot.Slot` of its own, at the index just past the pool's
(``SLOT_BASE_INDEX + MAX_CONCURRENT_SESSIONS``), so it gets everything a session's browser gets: its own sandbox
and uid, the cgroup limits, the egress enforcer applying the network policy (§19.2, §24), the ledger that cleans
up after a crash. It runs without a live view, with :data:`SHARED_BROWSER_FLAGS` on top of the slot's flags. Each
owner gets a fresh ``BrowserContext`` (its own cookies, storage and cache) with a first page named
``browser-use-<owner>``, and a file area of its own under ``data/mcp/`` that goes away with the owner. One unused
context with its page is kept ready for the next owner.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
from pathlib import Path
from typing import TYPE_CHECKING

from playwright.async_api import Browser, BrowserContext, Page, Playwright, async_playwright

from openbrowse.mcpbrowser.pages import OwnerPages
from openbrowse.shielding import run_shielded
from openbrowse.slots.slot import Slot

if TYPE_CHECKING:
    from openbrowse.config import Settings
    from openbrowse.network.policy import NetworkRules
    from openbrowse.slots.ledger import Ledger

__all__ = ["SHARED_BROWSER_FLAGS", "SlotBrowser", "SlotLauncher", "owner_area"]

logger = logging.getLogger(__name__)

CONNECT_TIMEOUT_MS = 15_000

# Each owner's context opens a window of its own, and every window of this Chromium preloads the omnibox popup as
# WebUI pages (chrome://omnibox-popup.top-chrome/, its AI-mode variant) in a renderer of the window's profile:
# one more renderer per owner, nobody ever types in that omnibox. With these features off the popup falls back to
# native views and a new owner costs its page's renderer only (docs/benchmarks.md, "MCP browser tools"). Site
# isolation and the one-renderer-per-context rule are untouched. Chromium honours only the last --disable-features
# of its command line: should the slot's own flags ever carry one, its features must be merged in here.
SHARED_BROWSER_FLAGS: tuple[str, ...] = (
    "--disable-features=WebUIOmniboxPopup,WebUIOmniboxAimPopup,WebUIOmniboxFullPopup,AimEnabled",
)


def owner_area(root: Path, owner: str) -> Path:
    """An owner's file area: a digest of its id, so no id can name a path."""
    return root / hashlib.sha256(owner.encode()).hexdigest()[:24]


class SlotBrowser:
    """One launched shared browser: its slot, the Playwright driver and the CDP connection."""

    def __init__(self, slot: Slot, playwright: Playwright, browser: Browser, launcher: SlotLauncher) -> None:
        self.slot = slot
        self._playwright = playwright
        self._browser = browser
        self._launcher = launcher
        self._spare: asyncio.Task[tuple[BrowserContext, Page]] | None = None
        self._closing = False

    @property
    def alive(self) -> bool:
        return self.slot.running and self._browser.is_connected()

    @property
    def chromium_pid(self) -> int | None:
        """The browser process's pid (the leader of its process group), for tests and the benchmark."""
        for process in self.slot.processes():
            if process.name == "Chromium" and process.pid is not None:
                return process.pid
        return None

    async def open_owner(self, owner: str) -> OwnerPages:
        """A fresh context for ``owner``: the spare one when it is ready (then a new spare is started)."""
        context, page = await self._take_spare()
        try:
            pages = OwnerPages(
                context,
                files_dir=owner_area(self._launcher.files_root, owner),
                rules=self._launcher.rules,
                evaluate_enabled=self._launcher.evaluate_enabled,
                remove_files=True,
            )
            pages.select(pages.adopt(page, name=f"browser-use-{owner}"))
        except BaseException:
            await run_shielded(_quietly_close(context))
            raise
        return pages

    # -- the spare context ---------------------------------------------------------------------------------------
    # A new renderer takes 0.1-1 s to start on a busy machine, so one unused context with its first page is kept
    # ready: an owner's first call takes it and a new one is made in the background. It is never anyone's before.
    def refill(self) -> None:
        if self._spare is None and not self._closing:
            self._spare = asyncio.get_running_loop().create_task(self._make_context())

    async def _make_context(self) -> tuple[BrowserContext, Page]:
        context = await self._browser.new_context(accept_downloads=False)
        try:
            page = await context.new_page()
        except BaseException:
            await run_shielded(_quietly_close(context))
            raise
        return context, page

    async def _take_spare(self) -> tuple[BrowserContext, Page]:
        spare, self._spare = self._spare, None
        made: tuple[BrowserContext, Page] | None = None
        if spare is not None:
            try:
                made = await asyncio.shield(spare)
            except Exception as exc:  # the spare failed: make one now
                logger.warning("The shared browser's spare context failed: %s", exc)
        if made is None:
            made = await self._make_context()
        self.refill()
        return made

    async def aclose(self) -> None:
        await run_shielded(self._close())

    async def _close(self) -> None:
        self._closing = True
        spare, self._spare = self._spare, None
        if spare is not None:
            spare.cancel()
            with contextlib.suppress(BaseException):
                context, _ = await spare
                await _quietly_close(context)
        with contextlib.suppress(Exception):  # over CDP, close() only disconnects
            await self._browser.close()
        with contextlib.suppress(Exception):
            await self._playwright.stop()
        await self.slot.aclose()


async def _quietly_close(context: object) -> None:
    with contextlib.suppress(Exception):
        await context.close()  # type: ignore[attr-defined]


class SlotLauncher:
    """Starts the shared browser on its own slot; called by :class:`~openbrowse.mcpbrowser.shared.SharedBrowser`."""

    def __init__(
        self, settings: Settings, *, rules: NetworkRules | None, ledger: Ledger | None = None, index: int | None = None
    ) -> None:
        self.settings = settings
        self.rules = rules
        self.ledger = ledger
        self.index = index if index is not None else settings.SLOT_BASE_INDEX + settings.MAX_CONCURRENT_SESSIONS
        self.files_root = settings.data_dir / "mcp"
        self.evaluate_enabled = settings.CONTROL_EVALUATE

    async def __call__(self) -> SlotBrowser:
        slot = Slot(self.settings, self.index, ledger=self.ledger, browser_args=SHARED_BROWSER_FLAGS)
        playwright: Playwright | None = None
        try:
            await slot.start(vnc=False)
            playwright = await async_playwright().start()
            browser = await playwright.chromium.connect_over_cdp(slot.cdp_url, timeout=CONNECT_TIMEOUT_MS)
        except BaseException:
            await run_shielded(_abandon(slot, playwright))
            raise
        logger.info("Shared browser for the MCP browser tools is up on slot %d", self.index)
        launched = SlotBrowser(slot, playwright, browser, self)
        launched.refill()
        return launched


async def _abandon(slot: Slot, playwright: Playwright | None) -> None:
    if playwright is not None:
        with contextlib.suppress(Exception):
            await playwright.stop()
    await slot.aclose()
