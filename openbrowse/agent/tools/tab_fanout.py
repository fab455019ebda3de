"""Tab fan-out for interaction (spec §11.7): ``open_tabs(urls?)``, ``goto_tab(n)``, ``open_in_new_tab(index)``,
``close_tab()``.

The four actions share one state, the set of lazy tabs, so they live in one module: ``open_tabs`` opens up to 48
``about:blank`` tabs remembering what each should load; ``goto_tab(n)`` loads tab n and gives it the agent's
focus; only the base tab and the two most recently loaded tabs stay live (older ones go back to ``about:blank``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import urljoin

from browser_use import BrowserSession
from browser_use.agent.views import ActionResult
from browser_use.browser.events import SwitchTabEvent
from pydantic import BaseModel, Field

from openbrowse.agent.pages.cdp import close_tab as close_target, open_tab, wait_rendered

if TYPE_CHECKING:
    from browser_use import Tools

    from openbrowse.agent.tools.context import ToolContext

MAX_TABS = 48
LIVE_TABS = 2


@dataclass
class LazyTab:
    url: str
    target_id: str


@dataclass
class TabSet:
    base: str | None = None
    tabs: list[LazyTab] = field(default_factory=list)
    live: list[int] = field(default_factory=list)


class OpenTabsParams(BaseModel):
    urls: list[str] | None = Field(default=None, description="Up to 48 URLs; omit to use the last find_links set.")


class GotoTabParams(BaseModel):
    n: int = Field(description="The tab number from open_tabs (1-based).")


class OpenInNewTabParams(BaseModel):
    index: int = Field(description="Element index of a link to open in a new tab.")


class CloseTabParams(BaseModel):
    pass


async def _focus(browser: BrowserSession, target_id: str) -> None:
    event = browser.event_bus.dispatch(SwitchTabEvent(target_id=target_id))
    await event
    await event.event_result(raise_if_any=True, raise_if_none=False)


async def _navigate(browser: BrowserSession, target_id: str, url: str) -> None:
    session = await browser.get_or_create_cdp_session(target_id, focus=False)
    await session.cdp_client.send.Page.navigate(params={"url": url}, session_id=session.session_id)


async def open_tabs(ctx: ToolContext, state: TabSet, browser: BrowserSession, urls: list[str] | None) -> str:
    wanted = [u for u in (urls or ctx.reading.default_urls()) if u.startswith(("http://", "https://"))]
    if not wanted:
        raise RuntimeError("open_tabs needs http(s) URLs (or a find_links set to take them from).")
    wanted = wanted[:MAX_TABS]
    state.base = state.base or browser.agent_focus_target_id
    first = len(state.tabs) + 1
    for url in wanted:
        state.tabs.append(LazyTab(url, await open_tab(browser, "about:blank")))
    listing = "; ".join(f"{first + i}: {url}" for i, url in enumerate(wanted))
    return f"Opened {len(wanted)} lazy tab(s) — {listing}. goto_tab(n) loads one and focuses it."


async def goto_tab(state: TabSet, browser: BrowserSession, n: int) -> str:
    if not 1 <= n <= len(state.tabs):
        raise RuntimeError(f"There is no tab {n}; open_tabs made tabs 1 to {len(state.tabs)}.")
    tab = state.tabs[n - 1]
    await _navigate(browser, tab.target_id, tab.url)
    await _focus(browser, tab.target_id)
    await wait_rendered(browser, tab.target_id)
    state.live = [m for m in state.live if m != n] + [n]
    while len(state.live) > LIVE_TABS:
        old = state.live.pop(0)
        await _navigate(browser, state.tabs[old - 1].target_id, "about:blank")
    return f"Tab {n} is loaded and focused: {tab.url}"


async def open_in_new_tab(browser: BrowserSession, index: int) -> str:
    node = (await browser.get_selector_map()).get(index)
    href = node.attributes.get("href") if node is not None else None
    if not href:
        raise RuntimeError(f"Element {index} is not a link with an href; pick a link's index from the state.")
    url = urljoin(await browser.get_current_page_url(), href)
    target_id = await open_tab(browser, url)
    await _focus(browser, target_id)
    await wait_rendered(browser, target_id)
    return f"Opened {url} in a new tab and focused it; close_tab() returns to the page you came from."


async def close_current_tab(state: TabSet, browser: BrowserSession) -> str:
    current = browser.agent_focus_target_id
    if current is None or current == state.base:
        raise RuntimeError("The focused tab is the base tab; close_tab closes only tabs opened from it.")
    home = state.base or next((t.target_id for t in browser.get_page_targets() if t.target_id != current), None)
    if home is not None:
        await _focus(browser, home)
    await close_target(browser, current)
    state.tabs = [t for t in state.tabs if t.target_id != current]
    state.live = []
    return "Closed the tab; focus is back on the base tab."


def register_tab_fanout(tools: Tools[Any], ctx: ToolContext) -> None:
    state = TabSet()

    async def open_tabs_action(params: OpenTabsParams, browser_session: BrowserSession) -> ActionResult:
        return ActionResult(extracted_content=await open_tabs(ctx, state, browser_session, params.urls))

    async def goto_tab_action(params: GotoTabParams, browser_session: BrowserSession) -> ActionResult:
        return ActionResult(extracted_content=await goto_tab(state, browser_session, params.n))

    async def open_in_new_tab_action(params: OpenInNewTabParams, browser_session: BrowserSession) -> ActionResult:
        return ActionResult(extracted_content=await open_in_new_tab(browser_session, params.index))

    async def close_tab_action(_params: CloseTabParams, browser_session: BrowserSession) -> ActionResult:
        return ActionResult(extracted_content=await close_current_tab(state, browser_session))

    actions: list[tuple[str, Any, type[BaseModel], bool, str]] = [
        ("open_tabs", open_tabs_action, OpenTabsParams, False, "Open up to 48 lazy tabs for URLs to work through."),
        ("goto_tab", goto_tab_action, GotoTabParams, True, "Load tab n from open_tabs and focus it."),
        ("open_in_new_tab", open_in_new_tab_action, OpenInNewTabParams, True, "Open a link in a new tab."),
        ("close_tab", close_tab_action, CloseTabParams, True, "Close the focused tab and return to the base tab."),
    ]
    for name, function, model, terminates, description in actions:
        function.__name__ = name
        function.__annotations__["browser_session"] = BrowserSession
        tools.action(description, param_model=model, terminates_sequence=terminates)(function)
