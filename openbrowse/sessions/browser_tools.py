"""Wiring of the MCP browser tools (spec §23.3): the shared browser's launcher and raw browsers by id.

The app builds one :class:`~openbrowse.mcpbrowser.backend.BrowserToolsBackend` for its lifespan: the shared browser
on its own slot (after the pool's), sharing the pool's ledger so a crashed server's leftovers are swept like any
slot's, under the same network rules as every browser; and ``browserId`` resolved through the raw-browser
service, a call counting as use of that browser (its idle clock starts again).
"""

from __future__ import annotations

from openbrowse.config import Settings
from openbrowse.errors import OpenBrowseError
from openbrowse.mcpbrowser.backend import BrowserToolsBackend
from openbrowse.mcpbrowser.handles import ContextHandles
from openbrowse.mcpbrowser.launcher import SlotLauncher
from openbrowse.mcpbrowser.pages import OwnerPages, ToolFailure
from openbrowse.mcpbrowser.raw import RawBrowsers, RawTarget
from openbrowse.mcpbrowser.shared import SharedBrowser
from openbrowse.network.policy import NetworkRules
from openbrowse.sessions.browsers import BrowserService
from openbrowse.slots.ledger import Ledger

__all__ = ["RAW_FILES", "build_browser_tools"]

RAW_FILES = "screenshots"  # a raw browser's screenshots land in its file area's screenshots/ (spec §22.2)


def build_browser_tools(settings: Settings, ledger: Ledger, browsers: BrowserService) -> BrowserToolsBackend:
    rules = NetworkRules.from_settings(settings)

    async def resolve(browser_id: str) -> RawTarget:
        try:
            endpoint = await browsers.cdp_endpoint(browser_id)
        except OpenBrowseError as exc:
            raise ToolFailure(f"Browser {browser_id}: {exc.message}") from exc
        browsers.touch(browser_id)
        return RawTarget(endpoint.http_url, browsers.files_dir(browser_id) / RAW_FILES)

    shared: SharedBrowser[OwnerPages] = SharedBrowser(
        SlotLauncher(settings, rules=rules, ledger=ledger), idle_s=settings.SHARED_BROWSER_IDLE_S
    )
    raw = RawBrowsers(resolve, rules=rules, evaluate_enabled=settings.CONTROL_EVALUATE)
    idle_s = settings.MCP_OWNER_IDLE_S
    # an owner gone idle is released within a fraction of its idle time (at least every minute)
    return BrowserToolsBackend(shared, raw, ContextHandles(idle_s), sweep_every_s=min(60.0, max(idle_s / 4, 0.5)))
