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
from openbrowse.sessions.browsers import BrowserRequest, BrowserService, _Running
from openbrowse.slots.slot import Slot
from openbrowse.store.browsers import BrowserRepo
from openbrowse.store.db import Database
from openbrowse.store.profiles import ProfileRepo


class NoLeases:
    def lease(self, owner: str, on_wait: Any = None) -> Any:
        raise AssertionError("no browser is started here")


async def test_a_slot_that_is_gone_is_reported_unavailable(tmp_path: Path) -> None:
    settings = Settings(OPENBROWSE_HOME=tmp_path)
    async with Database(settings.db_path) as db:
        service = BrowserService(BrowserRepo(db), ProfileRepo(db), NoLeases(), live_url=lambda browser_id: "")
        browser = _Running(BrowserId("b-gone"), BrowserRequest())
        browser.slot = Slot(settings, 0)  # a real slot that is not running: what is left after Chromium died
        service._running[browser.id] = browser
        with pytest.raises(BrowserUnavailable) as unavailable:
            await service.cdp_endpoint("b-gone")
        assert isinstance(unavailable.value, OpenBrowseError)
        assert unavailable.value.message == "The browser is no longer running"
