"""Lean state (spec §10.5): skip the page state after a step that did only store, file or sandbox work.

After such a step on an unchanged URL, re-reading the DOM and taking a screenshot buys nothing: the page is
exactly as the model last saw it. The next step's per-step fetch then gets a stub instead — URL, title with a
CODE MODE note, the tab list, no element list, no screenshot, and an explanation — and browser-use's cached
selector map is left alone, so element indices from the last full state still resolve.

The stub is one-shot per arming, and only the per-step fetch sees it: :meth:`LeanState.before_step` (called
from the ``on_step_start`` hook, right before browser-use's ``_prepare_context``) installs a replacement for
``get_browser_state_summary`` on the session that removes itself on its first call, so tools calling the
method during the step get the real state.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

from browser_use import BrowserSession
from browser_use.browser.views import BrowserStateSummary
from browser_use.dom.views import SerializedDOMState

from openbrowse.agent.turns.steps import CATEGORIES
from openbrowse.upstream.state_fetch import override_state_fetch, restore_state_fetch

logger = logging.getLogger(__name__)

LEAN_ACTIONS = CATEGORIES["schema"] | frozenset(
    {
        "remember",
        "recall",
        "read_file",
        "write_file",
        "replace_file",
        "run_code_file",
        "read_pages",
        "http_fetch",
    }
)
CODE_MODE_NOTE = " — CODE MODE (page parked, state not re-read)"
EXPLANATION = (
    "CODE MODE: your last step only did store, file or sandbox work and the page URL did not change, so this "
    "state is a stub: no element list and no screenshot. The page is parked and healthy, exactly as in the last "
    "full state, and its element indices remain valid — you can still use them. The next step after any browser "
    "action gets the full state again."
)


class LeanState:
    """Arms after a lean-eligible step, serves one stub to the next per-step fetch."""

    def __init__(self) -> None:
        self._armed_url: str | None = None
        self.stubs_served = 0

    @property
    def armed(self) -> bool:
        return self._armed_url is not None

    def disarm(self) -> None:
        self._armed_url = None

    def after_step(self, executed: Iterable[str], url_at_start: str | None) -> None:
        """Arm when every executed action of the finished step was store/file/sandbox work."""
        names = list(executed)
        eligible = bool(names) and all(name in LEAN_ACTIONS for name in names)
        self._armed_url = url_at_start if eligible and url_at_start else None

    async def before_step(self, session: BrowserSession) -> None:
        """Install the one-shot stub for the coming per-step fetch if armed and the URL is unchanged."""
        armed, self._armed_url = self._armed_url, None
        restore_state_fetch(session)
        if armed is None:
            return
        try:
            url = await session.get_current_page_url()
            if url != armed:
                return
            stub = await stub_state(session, url)
        except Exception as exc:  # a stub is an optimisation: any doubt means the full state
            logger.debug("Lean state skipped: %s", exc)
            return
        self.stubs_served += 1

        async def per_step_fetch(*_args: Any, **_kwargs: Any) -> BrowserStateSummary:
            restore_state_fetch(session)
            return stub

        override_state_fetch(session, per_step_fetch)

    def discard(self, session: BrowserSession) -> None:
        """Remove a stub nobody fetched (the step ended before its fetch)."""
        restore_state_fetch(session)


async def stub_state(session: BrowserSession, url: str) -> BrowserStateSummary:
    """The stub: URL, title with the CODE MODE note, tabs, an empty DOM, no screenshot, the explanation."""
    title = await session.get_current_page_title()
    tabs = await session.get_tabs()
    return BrowserStateSummary(
        dom_state=SerializedDOMState(_root=None, selector_map={}),
        url=url,
        title=f"{title}{CODE_MODE_NOTE}",
        tabs=tabs,
        screenshot=None,
        state_error=EXPLANATION,
    )
