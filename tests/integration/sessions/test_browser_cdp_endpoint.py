"""A raw browser whose slot went away (crash, timeout, stop in progress) answers "unavailable", never a crash.

``cdp_socket`` and ``/cdp/json/version`` ask :meth:`BrowserService.cdp_endpoint`; a slot that is no longer
running must turn into a clean 503/1011, not a ``RuntimeError`` escaping into a 500 or a WebSocket traceback.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from openbrowse.config import Settings
from openbrowse.domain.ids import BrowserId
from openbrowse.errors import BrowserUnavailable, OpenBrowseError
from openbrowse.profiles.service import ProfileService
from openbrowse.sessions.browser_running import RunningBrowser
from openbrowse.sessions.browsers import BrowserRequest, BrowserService
from openbrowse.slots.slot import Slot
from openbrowse.store.browsers import BrowserRepo
from openbrowse.store.db import Database
from openbrowse.store.profiles import ProfileRepo


class NoLeases:
    """A slot pool with no slots: no browser is started here."""

    eviction_timeout = 0.0

    def lease(self, owner: str, on_wait: Any = None) -> Any:
        raise AssertionError("no browser is started here")

    def idle_slots(self) -> int:
        return 0

    def stats(self) -> Any:
        raise AssertionError("no browser is started here")

    def queue_position(self, owner: str) -> int | None:
        return None


async def test_a_slot_that_is_gone_is_reported_unavailable(tmp_path: Path) -> None:
    settings = Settings(OPENBROWSE_HOME=tmp_path)
    async with Database(settings.db_path) as db:
        profiles = ProfileService(ProfileRepo(db))
        service = BrowserService(BrowserRepo(db), profiles, NoLeases(), live_url=lambda browser_id: "")
        browser = RunningBrowser(BrowserId("b-gone"), BrowserRequest())
        browser.slot = Slot(settings, 0)  # a real slot that is not running: what is left after Chromium died
        service._running[browser.id] = browser
        with pytest.raises(BrowserUnavailable) as unavailable:
            await service.cdp_endpoint("b-gone")
        assert isinstance(unavailable.value, OpenBrowseError)
        assert unavailable.value.message == "The browser is no longer running"
