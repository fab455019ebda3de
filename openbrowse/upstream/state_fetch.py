"""A one-shot replacement of the per-step page-state fetch on one browser session.

Upstream: browser-use 0.13.x. ``browser_use.agent.service.Agent._prepare_context`` reads the page state with
``self.browser_session.get_browser_state_summary(...)``; ``BrowserSession`` is a pydantic model whose methods
are plain functions on the class, so an entry of that name in the instance ``__dict__`` shadows the method for
that one session (bypassing pydantic's ``__setattr__``, which refuses unknown attributes).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from browser_use import BrowserSession
from browser_use.browser.views import BrowserStateSummary

STATE_FETCH = "get_browser_state_summary"

StateFetch = Callable[..., Awaitable[BrowserStateSummary]]


def override_state_fetch(session: BrowserSession, fetch: StateFetch) -> None:
    """Calls of ``session.get_browser_state_summary`` go to ``fetch`` until :func:`restore_state_fetch`."""
    session.__dict__[STATE_FETCH] = fetch


def restore_state_fetch(session: BrowserSession) -> None:
    """Back to browser-use's own method (a no-op when nothing is overridden)."""
    instance: dict[str, Any] = session.__dict__
    instance.pop(STATE_FETCH, None)
