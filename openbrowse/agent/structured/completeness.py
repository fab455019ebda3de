"""The completeness gate on ``done`` (spec §13.5): the exact list of what the store still lacks.

The gate is one-shot per turn: the first ``done`` with deficiencies is bounced with the list, the second is
always accepted. On acceptance the store's content (long values elided, at most 8000 chars) is prepended to the
done text so the reviewer sees the structured output.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from openbrowse.agent.structured.answer_store import AnswerStore, _elided
from openbrowse.agent.structured.coverage import count_fields
from openbrowse.agent.structured.evidence import canonical_url
from openbrowse.agent.structured.schema_model import is_empty

LINKS_LISTED = 8
REVIEW_BLOCK_LIMIT = 8000
_NON_ALNUM = re.compile(r"[^a-z0-9]")


def deficiencies(store: AnswerStore) -> list[str]:
    found: list[str] = []
    for name in store.model.fields:
        if name != store.answer_key and name not in store.absent and is_empty(store.content().get(name)):
            found.append(f"{name} (not set)")
    if store.answer_key is not None:
        items = store.items
        if not items:
            found.append(f"{store.answer_key}: no items")
        else:
            found += _field_gaps(store)
        found += _link_deficit(store)
    if store.refused:
        urls = list(store.refused)[:LINKS_LISTED]
        found.append(f"{len(store.refused)} refused item(s) outstanding: {', '.join(urls)}")
    found += _shortcuts(store)
    return found


def _field_gaps(store: AnswerStore) -> list[str]:
    counts = count_fields(store.item_node, store.items, store.absent)
    all_attempted = store.own_url_field is not None and not store.unread_item_urls()
    gaps = []
    for name in counts.filled:
        empty = counts.empty_on(name)
        if empty == 0 or (all_attempted and empty < counts.total):
            continue  # partial fields are complete once every item's page has been read
        gaps.append(f"{name} empty on {empty} of {counts.total}")
    return gaps


def _link_deficit(store: AnswerStore) -> list[str]:
    links = store.evidence.found_links()
    if len(links) <= len(store.items):
        return []
    have = {canonical_url(u) for item in store.items if (u := store.item_url(item))}
    missing = [link for link in links if canonical_url(link) not in have]
    if not missing:
        return []
    more = f" (+{len(missing) - LINKS_LISTED} more)" if len(missing) > LINKS_LISTED else ""
    return [
        f"find_links kept {len(links)} link(s) but the output has {len(store.items)} item(s); not turned into "
        f"items: {', '.join(missing[:LINKS_LISTED])}{more}"
    ]


def _shortcuts(store: AnswerStore) -> list[str]:
    hints: list[str] = []
    counts = count_fields(store.item_node, store.items, store.absent)
    empty_fields = {name for name in counts.filled if counts.empty_on(name) and counts.total}
    normal = {_NON_ALNUM.sub("", n.lower()): n for n in empty_fields}
    extra_keys = {k for item in store.items if isinstance(item, dict) for k in item if k not in counts.filled}
    for key in sorted(extra_keys):
        target = normal.get(_NON_ALNUM.sub("", key.lower()))
        if target is not None and key not in store.absent:
            hints.append(f"the extra key '{key}' looks like the empty field '{target}'")
    if any("date" in name.lower() for name in empty_fields):
        hints.append("dates usually live in JSON-LD (datePosted, validThrough)")
    return hints


def gate_text(found: list[str]) -> str:
    return "Completeness gate: " + "; ".join(found)


def bounce_message(found: list[str]) -> str:
    return (
        "done was NOT accepted — the output is incomplete. "
        + gate_text(found)
        + ". Fill these from the pages, or mark_absent the fields the source really does not publish (with a "
        "reason), then call done again. The next done is accepted as it stands."
    )


@dataclass
class Gate:
    """One-shot per turn."""

    store: AnswerStore
    fired: bool = False

    def new_turn(self) -> None:
        self.fired = False
        self.store.reads_at_bounce = None  # "nothing read since the bounce" is about this turn's bounce

    def check(self) -> list[str]:
        """The deficiencies that bounce this ``done``; empty when it is accepted."""
        if self.fired:
            return []
        found = deficiencies(self.store)
        if found:
            self.fired = True
            self.store.reads_at_bounce = self.store.evidence.reads
        return found


def review_block(store: AnswerStore) -> str:
    content = json.dumps(_elided(store.content()), ensure_ascii=False)
    if len(content) > REVIEW_BLOCK_LIMIT:
        content = content[:REVIEW_BLOCK_LIMIT] + "…"
    return (
        f"STRUCTURED OUTPUT (the answer store; values shown as <N chars> are elided for display only):\n{content}\n\n"
    )
