"""The coverage line every store write answers with (spec §13.3), and the per-field counts behind it.

``Coverage — jobs: 14 item(s); filled on all: title, jobUrl; partial: salary 3/14; empty on all: team;
marked absent: remote; top-level not set: company.`` Segments with nothing to list are left out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from openbrowse.agent.structured.schema_model import Node, is_empty


@dataclass(frozen=True, slots=True)
class FieldCounts:
    """How many of the items fill each item field (absent-marked fields excluded)."""

    total: int
    filled: dict[str, int]

    def empty_on(self, name: str) -> int:
        return self.total - self.filled.get(name, 0)


def item_field_names(item_node: Node | None) -> list[str]:
    return list(item_node.fields) if item_node is not None and item_node.kind == "object" else []


def count_fields(item_node: Node | None, items: Sequence[Any], absent: Mapping[str, str]) -> FieldCounts:
    names = [n for n in item_field_names(item_node) if n not in absent]
    filled = {
        name: sum(1 for item in items if isinstance(item, dict) and not is_empty(item.get(name))) for name in names
    }
    return FieldCounts(total=len(items), filled=filled)


def coverage_line(
    model: Node,
    answer_key: str | None,
    content: Mapping[str, Any],
    absent: Mapping[str, str],
) -> str:
    segments: list[str] = []
    if answer_key is not None:
        items = content.get(answer_key) or []
        item_node = model.fields[answer_key].node.items
        segments.append(f"{answer_key}: {len(items)} item(s)")
        counts = count_fields(item_node, items, absent)
        if items:
            full = [n for n, k in counts.filled.items() if k == counts.total]
            partial = [f"{n} {k}/{counts.total}" for n, k in counts.filled.items() if 0 < k < counts.total]
            empty = [n for n, k in counts.filled.items() if k == 0]
            segments += _listed("filled on all", full) + _listed("partial", partial) + _listed("empty on all", empty)
    segments += _listed("marked absent", list(absent))
    not_set = [
        name for name in model.fields if name != answer_key and name not in absent and is_empty(content.get(name))
    ]
    segments += _listed("top-level not set", not_set)
    return "Coverage — " + "; ".join(segments or ["nothing set yet"]) + "."


def _listed(label: str, names: list[str]) -> list[str]:
    return [f"{label}: {', '.join(names)}"] if names else []
