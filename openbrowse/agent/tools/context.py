"""What every added tool receives: the session's file area, network rules, clipboard and feed."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from openbrowse.agent.files.quota import DEFAULT_AREA_MB, AreaQuota
from openbrowse.agent.tools.clipboard import Clipboard
from openbrowse.agent.tools.pacing import active_runs
from openbrowse.agent.tools.reading_state import ReadingState
from openbrowse.domain.browser_folders import BrowserFolders
from openbrowse.domain.feed import EventCategory, FeedEntry, FeedSink
from openbrowse.domain.ids import SessionId
from openbrowse.domain.scripts import ScriptRunner
from openbrowse.network.policy import NetworkRules
from openbrowse.network.proxy_route import ProxyRoute

if TYPE_CHECKING:
    from openbrowse.agent.code.stream import CodeStreamer
    from openbrowse.agent.structured.answer_store import AnswerStore

if TYPE_CHECKING:
    from openbrowse.agent.tools.captcha_solver import CaptchaSolver


@dataclass(frozen=True, slots=True)
class ToolContext:
    session_id: SessionId
    files_dir: Path
    clipboard: Clipboard
    sink: FeedSink
    network: NetworkRules = field(default_factory=NetworkRules)
    proxy: ProxyRoute | None = None
    """The session's upstream proxy (spec §28.1): server-side fetches go through it too."""
    captcha_solver: bool = False
    captcha: CaptchaSolver | None = None
    """The CapSolver-backed solver; set only when ``CAPSOLVER_API_KEY`` is (spec §11.6)."""
    reading: ReadingState = field(default_factory=ReadingState)
    store: AnswerStore | None = None
    """The answer store when the output schema converts: ``run_code_file`` scripts write to it too."""
    active_sessions: Callable[[], int] = active_runs
    """How many sessions run on this host now (read_pages paces its tabs only under real contention)."""
    code_view: CodeStreamer | None = None
    """Code streaming (spec §11.3): ``run_code_file`` reports ``Running`` and the script's end to it."""
    scripts: ScriptRunner | None = None
    """The session's script host (spec §11.3, §24.1): ``run_code_file`` runs there, never in this process."""
    browser_folders: BrowserFolders | None = None
    """The slot's ``uploads/`` and ``downloads/``, the only files its Chromium sees (``upload_file``, §24.6)."""
    file_area_mb: int = DEFAULT_AREA_MB
    """The cap of ``files_dir`` (``SLOT_DISK_MB``, spec §24.5): what comes in from the slot or a script fits."""

    workspace_dir: Path | None = None
    """The attached workspace's folder (spec §27.2): the file actions' root, a source for ``upload_file``."""
    workspace_limit_bytes: int = 0
    """``WORKSPACE_MAX_MB`` in bytes: what the agent's writes to the workspace stay under."""

    @property
    def file_quota(self) -> AreaQuota:
        return AreaQuota.of(self.files_dir, self.file_area_mb)

    ask_for_human: Callable[[str], Awaitable[None]] | None = None
    """Pauses the session for a person (``wait_for_human``, spec §21.5); None where no one could take over."""

    async def event(self, category: EventCategory, action: str, summary: str, **data: Any) -> None:
        await self.sink.append(self.session_id, FeedEntry.event(category, action, summary, **data))
