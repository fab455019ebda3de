"""The real tabs ``read_pages`` loads its waves into (spec §11.2).

The first wave opens its tabs; later waves navigate the same tabs to their pages, so they start no new renderer
process and wait for no new CDP attach (on two cores, spawning a renderer per page was a large share of a wave).
The reader starts loading a tab's next page as soon as the tab was read, while it reads the wave's other tabs.
A tab whose page failed is closed and replaced by a fresh one. :meth:`WaveTabs.close` returns focus home and
closes them all; the reader that owns the pool calls it once, shielded.
"""

from __future__ import annotations

import asyncio
import contextlib

from browser_use import BrowserSession

from openbrowse.agent.pages.cdp import close_tab, focus_tab, navigate_tab, open_tab


class WaveTabs:
    def __init__(self, browser: BrowserSession, home: str | None) -> None:
        self._browser = browser
        self._home = home
        self._tabs: list[str] = []

    async def load(self, urls: list[str], spacing: float = 0.0) -> list[tuple[str, str]]:
        """Each URL loading in a tab of the pool (reused first, opened when the pool is short), in order;
        ``spacing`` seconds between loads."""
        current = list(self._tabs)
        slots = [current[i] if i < len(current) else None for i in range(len(urls))]
        if spacing:
            targets = []
            for index, (slot, url) in enumerate(zip(slots, urls, strict=True)):
                if index:
                    await asyncio.sleep(spacing)
                targets.append(await self.reuse(slot, url))
        else:
            targets = list(
                await asyncio.gather(*(self.reuse(slot, url) for slot, url in zip(slots, urls, strict=True)))
            )
        await asyncio.gather(*(self.discard(target) for target in current if target not in targets))
        return list(zip(urls, targets, strict=True))

    async def reuse(self, target: str | None, url: str) -> str:
        """Load ``url`` in the pool's tab ``target`` (a fresh tab when there is none or it cannot navigate)."""
        if target is not None:
            try:
                await navigate_tab(self._browser, target, url)
                return target
            except Exception:  # the old tab went away or cannot navigate: a fresh one instead
                await self.discard(target)
        fresh = await open_tab(self._browser, url)
        self._tabs.append(fresh)
        return fresh

    async def discard(self, target: str) -> None:
        """A tab whose page failed is not reused."""
        if target in self._tabs:
            self._tabs.remove(target)
        await close_tab(self._browser, target)

    async def close(self) -> None:
        tabs, self._tabs = self._tabs, []
        if not tabs:
            return
        if self._home is not None:
            with contextlib.suppress(Exception):  # the home tab is gone: closing the wave's tabs matters more
                await focus_tab(self._browser, self._home)
        await asyncio.gather(*(close_tab(self._browser, target) for target in tabs))
