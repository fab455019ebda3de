"""BrowserToolsBackend: what ``/v3/mcp`` calls to run a browser tool for an owner (spec §23.3).

Without ``browserId`` a call runs in the owner's context of the :class:`~openbrowse.mcpbrowser.shared.SharedBrowser`;
with it, on that raw browser (:mod:`openbrowse.mcpbrowser.raw`). The owner is the call's ``contextId`` handle
(:mod:`openbrowse.mcpbrowser.handles`) when it has one, else its MCP session; a call with neither (a client of the
stateless revision that opened no context) is refused with the way to get one. Calls of one owner (or on one raw
browser) run one at a time. Every failure comes back as :class:`~openbrowse.mcpbrowser.pages.ToolFailure` with one
readable sentence, which the MCP layer returns as an ``isError`` result.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Collection
from typing import TYPE_CHECKING, Any

from playwright.async_api import Error as PlaywrightError
from pydantic import ValidationError

from openbrowse.errors import OpenBrowseError
from openbrowse.mcpbrowser.handles import ContextHandles
from openbrowse.mcpbrowser.pages import OwnerPages, ToolFailure
from openbrowse.mcpbrowser.raw import RawBrowsers
from openbrowse.mcpbrowser.shared import SharedBrowser
from openbrowse.mcpbrowser.tool_args import ToolArgs
from openbrowse.mcpbrowser.tools import CATALOG, BrowserTool
from openbrowse.shielding import run_shielded

if TYPE_CHECKING:
    from openbrowse.mcpbrowser.tools import Content

__all__ = ["BrowserToolsBackend"]

logger = logging.getLogger(__name__)

_TOOLS = {tool.name: tool for tool in CATALOG}
NO_CONTEXT = (
    "This call has no browser context: without an MCP session, call open_browser_context first and pass the "
    "contextId it returns to every browser tool (close_browser_context when done)."
)


def _first_line(exc: BaseException) -> str:
    text = (getattr(exc, "message", None) or str(exc)).strip()
    line = text.splitlines()[0] if text else type(exc).__name__
    return line[:500]


class BrowserToolsBackend:
    """The catalog, the shared browser and the raw-browser attachments, for the app's lifespan."""

    def __init__(
        self,
        shared: SharedBrowser[OwnerPages],
        raw: RawBrowsers,
        handles: ContextHandles,
        *,
        sweep_every_s: float = 60.0,
    ) -> None:
        self.shared = shared
        self.raw = raw
        self.handles = handles
        self.catalog: tuple[BrowserTool, ...] = CATALOG
        self.live_owners: Callable[[], Collection[str]] | None = None
        """The MCP sessions that still exist (set by the MCP endpoint): an owner whose session went away without
        the client ending it (it idled out or crashed) is released by the next sweep, as is an expired handle's."""
        self._sweep_every_s = sweep_every_s
        self._sweeper: asyncio.Task[None] | None = None

    async def run(self, name: str, session: str | None, arguments: dict[str, Any]) -> Content:
        """Run tool ``name`` for the call's ``contextId``, else its MCP ``session`` (None for a stateless call);
        raises :class:`ToolFailure` with the sentence to show."""
        tool = _TOOLS.get(name)
        if tool is None:  # before any context is created (seed)
            raise ToolFailure(f"Unknown tool: {name}")
        try:
            call = tool.arguments.model_validate(arguments)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(part) for part in first.get("loc", ())) or "arguments"
            raise ToolFailure(f"{where}: {first.get('msg', 'invalid value')}") from exc
        if call.browserId:
            return await self._run_on(tool, call, await self.raw.pages(call.browserId))
        if call.contextId:
            with self.handles.use(call.contextId) as owner:
                return await self._run_as(tool, call, owner)
        if session is None:
            raise ToolFailure(NO_CONTEXT)
        return await self._run_as(tool, call, session)

    async def _run_as(self, tool: BrowserTool, call: ToolArgs, owner: str) -> Content:
        try:
            return await self._run_on(tool, call, await self._owner(owner))
        except ToolFailure:
            browser = self.shared.browser
            if browser is None or browser.alive:
                raise
        # The shared browser died under the call (its Chromium was killed): the call runs again on a new one.
        logger.warning("The shared browser died during %s; running it again on a new browser", tool.name)
        return await self._run_on(tool, call, await self._owner(owner))

    async def _owner(self, owner: str) -> OwnerPages:
        try:
            return await self.shared.owner(owner)
        except OpenBrowseError as exc:
            raise ToolFailure(exc.message) from exc
        except Exception as exc:
            logger.exception("Starting the shared browser for the MCP browser tools failed")
            raise ToolFailure(f"The browser could not be started: {_first_line(exc)}") from exc

    @staticmethod
    async def _run_on(tool: BrowserTool, call: ToolArgs, pages: OwnerPages) -> Content:
        async with pages.lock:
            try:
                return await tool.run(pages, call)
            except ToolFailure:
                raise
            except PlaywrightError as exc:
                raise ToolFailure(_first_line(exc)) from exc

    async def release(self, owner: str) -> None:
        """The owner's MCP session ended: close its context (only its)."""
        await self.shared.release(owner)

    def open_context(self) -> str:
        """A new owner handle (``contextId``); its context and first page come with its first tool call."""
        return self.handles.open()

    async def close_context(self, handle: str) -> None:
        """End a handle and close its context; :class:`ToolFailure` if it is not live."""
        await self.shared.release(self.handles.close(handle))

    async def sweep(self) -> list[str]:
        """Release the owners whose MCP session no longer exists or whose handle expired; return them."""
        if self.live_owners is None:
            return []
        live = {*self.live_owners(), *self.handles.live_owners()}
        gone = [owner for owner in self.shared.owners if owner not in live]
        for owner in gone:
            logger.info("MCP session %s is gone without ending: releasing its browser context", owner)
            await self.shared.release(owner)
        return gone

    async def _sweep_forever(self) -> None:
        while True:
            await asyncio.sleep(self._sweep_every_s)
            try:
                await self.sweep()
            except Exception:
                logger.exception("Sweeping the MCP browser owners failed")

    async def aclose(self) -> None:
        await run_shielded(self._close())

    async def _close(self) -> None:
        sweeper, self._sweeper = self._sweeper, None
        if sweeper is not None:
            sweeper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await sweeper
        await self.raw.aclose()
        await self.shared.aclose()

    async def __aenter__(self) -> BrowserToolsBackend:
        self._sweeper = asyncio.get_running_loop().create_task(self._sweep_forever())
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()
