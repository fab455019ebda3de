"""TabState: what the control API remembers about one tab between calls (spec §20.2).

The engine keeps one per Playwright ``Page`` it has seen. :func:`openbrowse.control.page_log.watch` fills the logs and
the dialog lists from the page's events; snapshots keep their refs here, so a later action can tell a fresh ref
from a stale one (refs are valid for the tab's current document and snapshot generation only).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Any

__all__ = ["LOG_LIMIT", "DialogArm", "RefTarget", "TabState"]

LOG_LIMIT = 500  # entries kept per tab and log (spec §20.2)


@dataclass(frozen=True, slots=True)
class RefTarget:
    """How a ref of the last snapshot finds its element again.

    ``kind`` is ``aria`` (Playwright's ``aria-ref=<ref>`` from an ai snapshot), ``role`` (``get_by_role`` with
    ``name`` and ``nth``, inside ``frame`` when the snapshot was scoped to one) or ``ax`` (a backend DOM node id).
    """

    kind: str
    role: str = ""
    name: str = ""
    nth: int | None = None
    frame: str | None = None
    selector: str | None = None
    """The CSS selector a role snapshot was scoped to (its refs resolve inside the first match)."""
    backend_node_id: int | None = None
    aria_ref: str | None = None


@dataclass(slots=True)
class DialogArm:
    accept: bool
    prompt_text: str | None = None
    dialog_id: str | None = None


@dataclass(slots=True)
class TabState:
    label: str | None = None
    tab_id: str = ""
    opened_by_us: bool = False
    document: int = 0
    """Bumped on every committed main-frame navigation: refs of an older document are stale."""
    generation: int = 0
    """Bumped by every snapshot: only the refs of the newest one are valid."""
    refs: dict[str, RefTarget] = field(default_factory=dict)
    refs_document: int = -1
    last_snapshot_lines: set[str] = field(default_factory=set)
    last_snapshot_document: int = -1
    last_snapshot_family: str = ""
    """The options of the last ai/role snapshot: ``[new]`` compares only snapshots of the same family."""
    console: deque[dict[str, Any]] = field(default_factory=lambda: deque(maxlen=LOG_LIMIT))
    errors: deque[dict[str, Any]] = field(default_factory=lambda: deque(maxlen=LOG_LIMIT))
    requests: deque[dict[str, Any]] = field(default_factory=lambda: deque(maxlen=LOG_LIMIT))
    dialogs_pending: list[dict[str, Any]] = field(default_factory=list)
    dialogs_recent: deque[dict[str, Any]] = field(default_factory=lambda: deque(maxlen=50))
    dialog_arm: DialogArm | None = None
    file_chooser_paths: list[str] | None = None

    def browser_state(self) -> dict[str, Any]:
        """The ``browserState`` that goes with ``blockedByDialog`` (seed)."""
        return {"dialogs": {"pending": list(self.dialogs_pending), "recent": list(self.dialogs_recent)}}

    def blocked(self) -> dict[str, Any] | None:
        """The body of a call that a pending dialog blocks, or None when no dialog is open."""
        if not self.dialogs_pending:
            return None
        return {"ok": False, "blockedByDialog": True, "browserState": self.browser_state()}
