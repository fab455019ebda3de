"""ControlTarget: what the control engine is given about the browser it drives (spec §20.1, §22.2).

The server side builds one per live browser (a session's parked or paused slot, or a raw browser) and hands it
to :class:`openbrowse.control.engine.ControlEngine`. Nothing here reaches back into sessions or slots.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

from openbrowse.domain.browser_folders import BrowserFolders
from openbrowse.network.policy import NetworkRules

__all__ = ["DOWNLOADS", "SCREENSHOTS", "TRACES", "AskModel", "ControlTarget", "FileUrl"]

SCREENSHOTS = "screenshots"  # the file area's folder for screenshots and PDFs (spec §22.2)
TRACES = "traces"  # and for Playwright traces
DOWNLOADS = "downloads"

FileUrl = Callable[[str, str], str]
"""The files route (spec §22.3) of ``<area>/<name>`` in the target's file area: ``file_url("screenshots", name)``."""

AskModel = Callable[[str], Awaitable[str]]
"""One model call for ``/extract`` with a ``query``: the prompt in, the model's text out (cost is counted by the
caller that built it)."""


@dataclass(frozen=True, slots=True)
class ControlTarget:
    """One live browser as the control engine sees it.

    ``cdp_url`` is the slot's loopback DevTools endpoint on the host (``http://127.0.0.1:<port>``, what Playwright's
    ``connect_over_cdp`` takes). ``folders`` are the slot's ``uploads/`` and ``downloads/`` (file inputs and
    downloads are confined to them). ``files_dir`` is the root of the target's own file area (spec §22.2):
    screenshots and PDFs are written to its ``screenshots/``, traces to its ``traces/``; ``file_url(area, name)`` is
    the plain files route (spec §22.3) of such a file (a call may answer a signed one instead, see
    :class:`~openbrowse.control.call.ControlCall`).
    """

    cdp_url: str
    folders: BrowserFolders
    files_dir: Path
    file_url: FileUrl
    rules: NetworkRules | None = None
    evaluate_enabled: bool = True
    ask_model: AskModel | None = None
