"""The code tab in the session's browser (spec §11.3): open it focused, show code in it, close it.

The tab is a real foreground tab of the session's Chromium showing this server's ``/codeview`` page, so the live
view shows the code while it is written and run. It never becomes the agent's page: browser-use's
``agent_focus_target_id`` is not touched, and on close the agent's page is activated again *before* the tab
goes, so the next step's screenshot is taken of the window's active tab (a background tab makes screenshots
hang, see the platform notes).

Everything here is cosmetic for the run: each CDP operation has a short time limit, and a failure is logged and
swallowed (the tab is then given up), never raised into the agent's step.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time

from browser_use import BrowserSession

from openbrowse.agent.pages.cdp import close_tab, evaluate, focus_tab, open_tab, wait_tab_forgotten
from openbrowse.shielding import run_shielded

logger = logging.getLogger(__name__)

CDP_LIMIT = 5.0
READY_LIMIT = 10.0
READY_POLL = 0.05


class CodeTab:
    """One session's code tab; at most one is open at a time."""

    def __init__(self, browser: BrowserSession, url: str) -> None:
        self._browser = browser
        self._url = url
        self._target: str | None = None
        self._home: str | None = None

    @property
    def is_open(self) -> bool:
        return self._target is not None

    async def open(self) -> bool:
        """Open and focus the tab and wait until its page is ready; False (and no tab) if that failed."""
        if self._target is not None:
            return True
        self._home = self._browser.agent_focus_target_id
        try:
            target = await asyncio.wait_for(open_tab(self._browser, self._url), CDP_LIMIT)
        except Exception as exc:
            logger.warning("Could not open the code tab: %s", exc)
            return False
        self._target = target
        try:
            await asyncio.wait_for(focus_tab(self._browser, target), CDP_LIMIT)
            await self._wait_ready(target)
        except Exception as exc:
            logger.warning("The code tab did not become ready: %s", exc)
            await self.close()
            return False
        return True

    async def _wait_ready(self, target: str) -> None:
        deadline = time.monotonic() + READY_LIMIT
        while True:
            try:
                ready = await asyncio.wait_for(
                    evaluate(self._browser, "typeof window.__setCode === 'function'", target), CDP_LIMIT
                )
            except Exception:
                ready = False
            if ready is True:
                return
            if time.monotonic() > deadline:
                raise TimeoutError("the code page did not define window.__setCode")
            await asyncio.sleep(READY_POLL)

    async def show(self, name: str, code: str, status: str) -> bool:
        """Call ``window.__setCode`` in the tab; False if the tab is gone or the call failed."""
        target = self._target
        if target is None:
            return False
        expression = f"window.__setCode({json.dumps(name)}, {json.dumps(code)}, {json.dumps(status)})"
        try:
            await asyncio.wait_for(evaluate(self._browser, expression, target), CDP_LIMIT)
        except Exception as exc:
            logger.warning("Could not update the code tab: %s", exc)
            return False
        return True

    async def close(self) -> None:
        """Focus the agent's page again, then close the tab (shielded: it also runs while a step is cancelled)."""
        target, self._target = self._target, None
        if target is None:
            return
        home = self._browser.agent_focus_target_id or self._home
        await run_shielded(self._close(target, home))

    async def _close(self, target: str, home: str | None) -> None:
        if home is not None and home != target:
            try:
                await asyncio.wait_for(focus_tab(self._browser, home), CDP_LIMIT)
            except Exception as exc:
                logger.warning("Could not refocus the agent's page: %s", exc)
        try:
            await asyncio.wait_for(close_tab(self._browser, target), CDP_LIMIT)
        except Exception as exc:
            logger.warning("Could not close the code tab: %s", exc)
            return
        # the next step's browser state (the lean stub included) must not list the code tab
        if not await wait_tab_forgotten(self._browser, target):
            logger.warning("browser-use still lists the closed code tab")
