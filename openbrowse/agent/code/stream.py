"""Code streaming (spec §11.3): the ``run_code_file`` source shown while the model writes it, then while it runs.

:class:`CodeStreamer` is the reply listener (``llm.replies.streaming``) of the agent's step calls. It decodes the
reply's JSON as it streams (``code_decoder``); as soon as a ``run_code_file`` action starts forming it opens the
code tab (``code_tab``), focused, and pushes the decoded code prefix into it at most every
:data:`PUSH_INTERVAL` seconds with status ``Writing``. Each push also goes to the activity board (the SSE
``code`` event). When the reply is complete: no ``run_code_file`` in it, the tab closes at once and the agent's
page is focused again, before any action runs; otherwise the tab stays until the tool runs the script
(``Running``) and the script ends (``Done``/``Failed``), then closes. A step that ends any other way (the action
was never reached, the call failed, the step was cancelled) closes it at the step's end.

Feed rows (category ``code``): one ``Writing <file>`` row per script per reply, written once the model has
begun the code and the name is known (or the reply ends); a re-run of a saved script (no ``code``) writes none.
The tool writes ``Running <file>``. The 0.35 s pushes are live-view and SSE
only; a row per push would bury the feed.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

from browser_use import BrowserSession

from openbrowse.agent.code.decoder import RUN_CODE, CodeDecoder
from openbrowse.agent.code.tab import CodeTab
from openbrowse.agent.files.delivery import safe_name
from openbrowse.domain.activity import ActivityReporter, CodeStatus

logger = logging.getLogger(__name__)

PUSH_INTERVAL = 0.35
"""Seconds between two pushes of the code prefix into the tab (and the SSE ``code`` event)."""
FAILED = "Failed"
"""The tab's status for a script that raised or timed out (the SSE event says ``Done``, spec §4.8)."""
UNNAMED = "script"

WriteEvent = Callable[[str, str], Awaitable[None]]
"""``(summary, file)``: append a ``code``/``write`` feed row."""


def script_file(name: str | None) -> str:
    """``scripts/<name>.py`` as ``run_code_file`` saves it."""
    return f"scripts/{safe_name((name or UNNAMED).removesuffix('.py'), 60)}.py"


def runs_code(completion: Any) -> bool:
    """True if a parsed agent reply has a ``run_code_file`` action."""
    for action in getattr(completion, "action", None) or []:
        dump = action.model_dump(exclude_unset=True) if hasattr(action, "model_dump") else action
        if isinstance(dump, dict) and RUN_CODE in dump:
            return True
    return False


class CodeStreamer:
    """One session's code streaming; implements :class:`openbrowse.llm.replies.streaming.ReplyListener`."""

    def __init__(
        self,
        browser: BrowserSession,
        codeview_url: str | None,
        activity: ActivityReporter,
        write_event: WriteEvent,
        *,
        clock: Callable[[], float] = time.monotonic,
        redact: Callable[[str], str] = str,
    ) -> None:
        self._redact = redact  # the session's redactor: the activity stream and the code tab hide its secrets
        self._tab = CodeTab(browser, codeview_url) if codeview_url else None
        self._activity = activity
        self._write_event = write_event
        self._clock = clock
        self._decoder = CodeDecoder()
        self._pushed_at: float | None = None
        self._pushed_code: str | None = None
        self._announced = False
        self._tab_failed = False

    # -- one agent call ----------------------------------------------------------------------------------------
    def begin_reply(self) -> None:
        """A new agent call starts (the tab of an earlier one is closed by then)."""
        self._decoder = CodeDecoder()
        self._pushed_at = None
        self._pushed_code = None
        self._announced = False
        self._tab_failed = False

    async def reply_started(self) -> None:
        self._decoder = CodeDecoder()  # a retry (repair, truncation) is written from scratch

    async def reply_text(self, fragment: str) -> None:
        self._decoder.feed(fragment)
        if not self._decoder.found:
            return
        await self._announce()
        if self._pushed_at is not None and self._clock() - self._pushed_at < PUSH_INTERVAL:
            return
        await self._push_writing()

    async def reply_finished(self, completion: Any) -> None:
        """The reply is parsed: keep the tab for the script, or close it before any action runs."""
        if not runs_code(completion):
            await self.close()
            return
        if not self._decoder.found:
            return  # not streamed (or not decodable): the tab opens when the script runs
        await self._announce(final=True)
        if self._decoder.code != self._pushed_code and self._pushed_at is not None:
            wait = PUSH_INTERVAL - (self._clock() - self._pushed_at)
            if wait > 0:
                await asyncio.sleep(wait)
            await self._push_writing()

    async def reply_failed(self) -> None:
        await self.close()

    # -- the script runs (called by run_code_file) -------------------------------------------------------------
    async def running(self, name: str, code: str) -> None:
        code = self._redact(code)
        self._activity.code(name, code, CodeStatus.RUNNING)
        if await self._ensure_tab():
            await self._show(name, code, CodeStatus.RUNNING.value)

    async def finished(self, name: str, code: str, *, failed: bool) -> None:
        code = self._redact(code)
        self._activity.code(name, code, CodeStatus.DONE)
        await self._show(name, code, FAILED if failed else CodeStatus.DONE.value)
        await self.close()

    async def close(self) -> None:
        """Refocus the agent's page and close the tab, if one is open."""
        if self._tab is not None:
            await self._tab.close()

    # -- internals ---------------------------------------------------------------------------------------------
    async def _announce(self, *, final: bool = False) -> None:
        if self._announced:
            return
        decoder = self._decoder
        if not decoder.code_started or (decoder.name is None and not final):
            return
        self._announced = True
        file = script_file(decoder.name)
        try:
            await self._write_event(f"Writing {file.removeprefix('scripts/')}", file)
        except Exception:
            logger.exception("Could not record the code write event")

    async def _push_writing(self) -> None:
        name = self._decoder.name or UNNAMED
        code = self._redact(self._decoder.code)
        self._pushed_at = self._clock()
        self._pushed_code = code
        self._activity.code(name, code, CodeStatus.WRITING)
        if await self._ensure_tab():
            await self._show(name, code, CodeStatus.WRITING.value)

    async def _ensure_tab(self) -> bool:
        if self._tab is None or self._tab_failed:
            return False
        if self._tab.is_open:
            return True
        opened = await self._tab.open()
        self._tab_failed = not opened
        return opened

    async def _show(self, name: str, code: str, status: str) -> None:
        if self._tab is not None and self._tab.is_open and not await self._tab.show(name, code, status):
            self._tab_failed = True
            await self._tab.close()
