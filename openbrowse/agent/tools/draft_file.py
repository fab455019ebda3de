"""``rows_draft.json`` (spec §11.2): read_pages' cumulative draft rows, derived by
:mod:`openbrowse.agent.structured.draft_rows` from every page read
this session and checked by the store's own validation."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from browser_use.filesystem.file_system import FileSystem

from openbrowse.agent.files.delivery import save
from openbrowse.agent.structured.draft_rows import draft_rows

if TYPE_CHECKING:
    from openbrowse.agent.tools.context import ToolContext

DRAFT_FILE = "rows_draft.json"


def save_drafts(ctx: ToolContext, file_system: FileSystem | None) -> int | None:
    """With a store of object items: write the cumulative draft rows (after pages.json, whose text is the
    evidence the store checks them against) and link each page's status to its row; the number of rows."""
    store = ctx.store
    if store is None or store.item_node is None or store.item_node.kind != "object":
        return None
    rows, source = draft_rows(
        store.item_node,
        store.own_url_field,
        list(ctx.reading.pages.values()),
        lambda name, value: store.item_field_problem(name, value) is None,
    )
    save(ctx.files_dir, DRAFT_FILE, json.dumps(rows, ensure_ascii=False, indent=1), file_system)
    for url, status in ctx.reading.statuses.items():
        if status.get("ok"):
            status["sourceRow"] = source.get(url)
    return len(rows)


def draft_note(drafts: int | None) -> str:
    if drafts is None:
        return ""
    if not drafts:
        return f" No page had enough text for a draft row ({DRAFT_FILE} is empty)."
    return (
        f" {drafts} draft row(s), one per page read (its URL, JSON-LD values and labelled specs matched to the "
        f"output's fields, unknowns left empty), are in {DRAFT_FILE}: check a few, then "
        f'add_items_from_file("{DRAFT_FILE}") loads them (update_items_from_file merges them into items you '
        "already added); sourceRow in read_pages_status.json links each page to its row."
    )
