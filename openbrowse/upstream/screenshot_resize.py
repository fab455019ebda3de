"""The model's copy of each step's screenshot is resized on a worker thread instead of on the event loop.

Upstream: browser-use 0.13.x. When ``llm_screenshot_size`` is set (browser-use sets it itself for Claude Sonnet
models), ``browser_use.agent.prompts.AgentMessagePrompt._resize_screenshot(self, screenshot_b64)`` decodes the
step's PNG, resizes it with LANCZOS and encodes it again while the step's message is built: synchronous work of
100-800 ms on the API's event loop (measured with ``bench/session_scaling.py``, docs/benchmarks.md). The state
comes from ``BrowserSession.get_browser_state_summary``, which the agent awaits first, and the session carries
``llm_screenshot_size`` (the agent copies it there).

So after the state fetch the same resize runs on a thread (``asyncio.to_thread``; PIL releases the GIL while it
decodes, resamples and encodes) and its result is kept against the screenshot string; browser-use's
``_resize_screenshot`` then finds it ready. Any other screenshot (none prepared, another size) takes upstream's
path unchanged, so the model gets the same bytes either way.
"""

from __future__ import annotations

import asyncio
import base64
import functools
import io
import logging
import threading
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from typing import Any

from browser_use import BrowserSession
from browser_use.agent.prompts import AgentMessagePrompt
from browser_use.browser.views import BrowserStateSummary

logger = logging.getLogger(__name__)

KEPT = 4
"""Resized screenshots kept: more than the sessions that build a message at the same moment."""
_MARK = "_openbrowse_off_loop"

Size = tuple[int, int]
Fetch = Callable[..., Awaitable[BrowserStateSummary]]
Resize = Callable[[AgentMessagePrompt, str], str]


class ResizedScreenshots:
    """Screenshots (base64 PNG) already resized for a size, the most recent :data:`KEPT`; thread-safe."""

    def __init__(self, kept: int = KEPT) -> None:
        self._kept = kept
        self._lock = threading.Lock()
        self._ready: OrderedDict[tuple[str, Size], str] = OrderedDict()

    def put(self, screenshot: str, size: Size, resized: str) -> None:
        with self._lock:
            self._ready[(screenshot, size)] = resized
            self._ready.move_to_end((screenshot, size))
            while len(self._ready) > self._kept:
                self._ready.popitem(last=False)

    def get(self, screenshot: str, size: Size) -> str | None:
        with self._lock:
            return self._ready.get((screenshot, size))


READY = ResizedScreenshots()


def resize_for_model(screenshot: str, size: Size) -> str:
    """What upstream's ``_resize_screenshot`` returns for ``screenshot`` at ``size`` (blocking: CPU-bound)."""
    from PIL import Image

    try:
        image = Image.open(io.BytesIO(base64.b64decode(screenshot)))
        if image.size == size:
            return screenshot
        buffer = io.BytesIO()
        image.resize(size, Image.Resampling.LANCZOS).save(buffer, format="PNG")
        return base64.b64encode(buffer.getvalue()).decode("utf-8")
    except Exception as exc:
        logger.warning("Failed to resize screenshot: %s, using original", exc)
        return screenshot


async def prepare(summary: BrowserStateSummary, size: Size | None) -> None:
    """Resize ``summary``'s screenshot for the model on a thread, ready for the message that follows."""
    screenshot = summary.screenshot
    if size is None or not screenshot or READY.get(screenshot, size) is not None:
        return
    READY.put(screenshot, size, await asyncio.to_thread(resize_for_model, screenshot, size))


def resize_off_loop() -> None:
    """Install both halves on browser-use's classes (idempotent; before the first agent is built)."""
    fetch: Fetch = BrowserSession.get_browser_state_summary
    if getattr(fetch, _MARK, False):
        return
    upstream_resize: Resize = AgentMessagePrompt._resize_screenshot

    @functools.wraps(fetch)
    async def get_browser_state_summary(self: BrowserSession, *args: Any, **kwargs: Any) -> BrowserStateSummary:
        summary = await fetch(self, *args, **kwargs)
        await prepare(summary, self.llm_screenshot_size)
        return summary

    @functools.wraps(upstream_resize)
    def _resize_screenshot(self: AgentMessagePrompt, screenshot_b64: str) -> str:
        size = self.llm_screenshot_size
        ready = READY.get(screenshot_b64, size) if size else None
        return ready if ready is not None else upstream_resize(self, screenshot_b64)

    setattr(get_browser_state_summary, _MARK, True)
    setattr(BrowserSession, "get_browser_state_summary", get_browser_state_summary)  # noqa: B010
    setattr(AgentMessagePrompt, "_resize_screenshot", _resize_screenshot)  # noqa: B010
