"""The answer store (spec §13.2–§13.4): the run's output, filled in place by validated writes.

A plain Python object: the agent's store actions (``agent/tools/answer.py``) and, later, the ``run_code_file``
sandbox bind the same methods. Every method returns the text the agent sees and raises :class:`StoreError` with
a one-sentence reason when a write is refused. Every successful write re-mirrors ``output.json`` and ends with
the coverage line.
"""

from __future__ import annotations

import copy
import json
import os
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from openbrowse.agent.structured.coverage import coverage_line
from openbrowse.agent.structured.evidence import EvidenceCorpus, canonical_url
from openbrowse.agent.structured.schema_model import (
    Node,
    coerce,
    empty_instance,
    errors,
    is_empty,
    own_url_field,
    strip_to_schema,
)

STUB_LIMIT = 2
LONG_VALUE = 120
ELIDE_OVER = 300
READ_LIMIT = 20
OUTPUT_FILE = "output.json"


class StoreError(Exception):
    """A refused write; the message tells the agent what to do instead."""


class AnswerStore:
    def __init__(
        self,
        model: Node,
        evidence: EvidenceCorpus,
        files_dir: Path | None = None,
        resolve_file: Callable[[str], Path] | None = None,
    ) -> None:
        self.model = model
        self.evidence = evidence
        self._files_dir = files_dir
        self._resolve_file = resolve_file or (lambda name: (files_dir or Path(".")) / name)
        self.answer_key = next((n for n, f in model.fields.items() if f.node.kind == "array"), None)
        self.item_node = model.fields[self.answer_key].node.items if self.answer_key else None
        self.own_url_field = own_url_field(self.item_node, self.answer_key)
        self._content: dict[str, Any] = empty_instance(model)
        self.absent: dict[str, str] = {}
        self.refused: dict[str, Any] = {}
        self.version = 0
        self.reads_at_bounce: int | None = None
        self._mirror()

    # -- reading ---------------------------------------------------------------------------------------------
    @property
    def items(self) -> list[Any]:
        return self._content[self.answer_key] if self.answer_key else []

    def content(self) -> dict[str, Any]:
        return copy.deepcopy(self._content)

    def is_empty(self) -> bool:
        return all(is_empty(v) for v in self._content.values())

    def coverage(self) -> str:
        return coverage_line(self.model, self.answer_key, self._content, self.absent)

    def adopt(self, answer: Any) -> bool:
        """Take a whole answer the agent wrote into ``done``'s text while the store was still empty.

        Real models often answer in the text instead of writing to the store; a schema-valid answer there is
        loaded (stripped to schema fields) rather than thrown away, and the gate then judges it like any other.
        """
        if not self.is_empty() or not isinstance(answer, dict):
            return False
        output = strip_to_schema(self.model, answer)
        if errors(self.model, output) or all(is_empty(v) for v in output.values()):
            return False
        self._content.update(output)
        self._written("Loaded the answer given in done.")
        return True

    def restore(self, previous: Any) -> bool:
        """Start from an earlier run's output (a keep-alive conversation replayed into a fresh browser).

        Only into an empty store, and only what fits the schema now (a changed schema may no longer fit): the
        values were checked live when that run wrote them, so the evidence guards are not asked again.
        """
        if not self.is_empty() or not isinstance(previous, dict):
            return False
        output = strip_to_schema(self.model, previous)
        if errors(self.model, output, partial=True) or all(is_empty(v) for v in output.values()):
            return False
        self._content.update(output)
        self._written("Restored the previous turn's output.")
        return True

    def final_output(self) -> tuple[dict[str, Any], list[str]]:
        """The publishable output (stripped to schema fields) and its validation errors."""
        output = strip_to_schema(self.model, self.content())
        return output, errors(self.model, output)

    def schema_valid(self) -> bool:
        return not self.final_output()[1]

    def item_url(self, item: Any) -> str | None:
        if self.own_url_field is None or not isinstance(item, dict):
            return None
        value = item.get(self.own_url_field)
        return value if isinstance(value, str) and value else None

    def unread_item_urls(self) -> list[str]:
        urls = [self.item_url(item) for item in self.items]
        return [u for u in urls if u is not None and not self.evidence.was_attempted(u)]

    def read_output(
        self, offset: int = 0, limit: int = READ_LIMIT, index: int | None = None, fields: Sequence[str] | None = None
    ) -> str:
        if index is not None:
            self._check_index(index)
            return json.dumps({"index": index, "item": _elided(_only(self.items[index], fields))}, ensure_ascii=False)
        window = self.items[offset : offset + max(1, limit)]
        top = {k: _elided(v) for k, v in self._content.items() if k != self.answer_key}
        view: dict[str, Any] = {**top}
        if self.answer_key:
            view[self.answer_key] = [
                {"index": offset + i, **_as_dict(_elided(_only(item, fields)))} for i, item in enumerate(window)
            ]
            view["totalItems"] = len(self.items)
        return json.dumps(view, ensure_ascii=False) + "\n" + self.coverage()

    def search_output(self, query: str) -> str:
        needle = query.strip().lower()
        if not needle:
            raise StoreError("search_output needs a non-empty query.")
        hits = [
            {"index": i, "item": _elided(item)}
            for i, item in enumerate(self.items)
            if needle in json.dumps(item, ensure_ascii=False).lower()
        ]
        top = [k for k, v in self._content.items() if k != self.answer_key and needle in json.dumps(v).lower()]
        return json.dumps({"matches": hits, "topLevelMatches": top}, ensure_ascii=False)

    # -- writes ----------------------------------------------------------------------------------------------
    def add_item(self, item: Any) -> str:
        index = self._append(item)
        return self._written(f"Added item #{index}.")

    def add_items_from_file(self, name: str) -> str:
        entries = self._load_array(name)
        added, problems = 0, []
        for number, entry in enumerate(entries):
            try:
                self._append(entry)
                added += 1
            except StoreError as refusal:
                problems.append(f"entry {number}: {refusal}")
        if not added and problems:
            raise StoreError(f"No item from {name} was added: " + " | ".join(problems[:8]))
        return self._written(f"Added {added} item(s) from {name}." + _problems(problems))

    def update_item(self, index: int, fields: dict[str, Any]) -> str:
        self._merge(index, fields)
        return self._written(f"Updated item #{index}.")

    def update_items(self, updates: Sequence[dict[str, Any]]) -> str:
        done, problems = 0, []
        for number, update in enumerate(updates):
            try:
                if not isinstance(update, dict) or not isinstance(update.get("fields"), dict):
                    raise StoreError("each update needs an index and a fields object")
                self._merge(int(update.get("index", -1)), update["fields"])
                done += 1
            except (StoreError, ValueError, TypeError) as refusal:
                problems.append(f"update {number}: {refusal}")
        if not done and problems:
            raise StoreError("No update applied: " + " | ".join(problems[:8]))
        return self._written(f"Updated {done} item(s)." + _problems(problems))

    def update_items_from_file(self, name: str) -> str:
        """Merge a saved array: entries ``{index, fields}``, or items matched to existing ones by their URL."""
        entries = self._load_array(name)
        by_url = {canonical_url(u): i for i, item in enumerate(self.items) if (u := self.item_url(item))}
        updates: list[dict[str, Any]] = []
        for entry in entries:
            if isinstance(entry, dict) and "fields" in entry:
                updates.append(entry)
            elif isinstance(entry, dict) and (url := self.item_url(entry)) and canonical_url(url) in by_url:
                updates.append({"index": by_url[canonical_url(url)], "fields": entry})
            else:
                updates.append({"index": -1, "fields": entry})
        return self.update_items(updates)

    def set_field(self, key: str, value: Any) -> str:
        spec = self.model.fields.get(key)
        if spec is None or key == self.answer_key:
            names = [n for n in self.model.fields if n != self.answer_key]
            raise StoreError(f"'{key}' is not a top-level field; fields: {', '.join(names) or 'none'}.")
        value = coerce(spec.node, value)
        self._check(spec.node, value, key)
        self._content[key] = value
        self.absent.pop(key, None)
        return self._written(f"Set {key}.")

    def remove_items(self, indices: Sequence[int], reason: str) -> str:
        if not reason.strip():
            raise StoreError("remove_items needs a reason.")
        for index in indices:
            self._check_index(index)
        for index in sorted(set(indices), reverse=True):
            del self.items[index]
        return self._written(f"Removed {len(set(indices))} item(s); later indices shifted down.")

    def mark_absent(self, fields: str | Sequence[str], reason: str) -> str:
        names = [fields] if isinstance(fields, str) else list(fields)
        if not reason.strip():
            raise StoreError("mark_absent needs a reason saying why the source does not publish the field.")
        item_names = list(self.item_node.fields) if self.item_node and self.item_node.kind == "object" else []
        for name in names:
            if name not in item_names and (name not in self.model.fields or name == self.answer_key):
                raise StoreError(f"'{name}' is not a field of the output.")
        self._check_absence_earned(names, item_names)
        for name in names:
            self.absent[name] = reason.strip()
        return self._written(f"Marked absent: {', '.join(names)}.")

    def item_field_problem(self, name: str, value: Any) -> str | None:
        """Why a write of ``value`` into the item field ``name`` would be refused (None when it would pass)."""
        if self.item_node is None or self.item_node.kind != "object" or name not in self.item_node.fields:
            return f"'{name}' is not a field of the items."
        node = self.item_node.fields[name].node
        try:
            self._check(node, coerce(node, value), name)
        except StoreError as refusal:
            return str(refusal)
        return None

    # -- guards ----------------------------------------------------------------------------------------------
    def _check_absence_earned(self, names: list[str], item_names: list[str]) -> None:
        if self.reads_at_bounce is not None and self.evidence.reads == self.reads_at_bounce:
            raise StoreError("Nothing was read since the completeness gate bounced done: read the pages first.")
        unread = self.unread_item_urls()
        if unread:
            raise StoreError(
                f"{len(unread)} item page(s) are still unread (e.g. {unread[0]}): read them before calling a "
                "field absent."
            )
        for name in names:
            if name in item_names and any(isinstance(i, dict) and not is_empty(i.get(name)) for i in self.items):
                raise StoreError(
                    f"'{name}' has values on some items and every page was read: the field is already complete."
                )

    def _check_evidence(self, node: Node, value: Any, path: str) -> None:
        for where, choice in _enum_values(node, value, path):
            if not self.evidence.mentions(choice):
                raise StoreError(
                    f"{where}: '{choice}' is not stated on any page read this session; read the item's page "
                    "first, or leave the field empty (never guess enum values)."
                )

    def _is_stub(self, item: Any) -> bool:
        url = self.item_url(item)
        if url is None or self.evidence.was_read(url):
            return False
        return not any(isinstance(v, str) and len(v) >= LONG_VALUE for v in item.values())

    def _check(self, node: Node, value: Any, path: str) -> None:
        problems = errors(node, value, path, partial=True)
        if problems:
            raise StoreError("; ".join(problems[:5]) + ".")
        self._check_evidence(node, value, path)

    # -- internals -------------------------------------------------------------------------------------------
    def _append(self, item: Any) -> int:
        if self.answer_key is None or self.item_node is None:
            raise StoreError("This output has no list of items; use set_field for its fields.")
        item = coerce(self.item_node, item)
        index = len(self.items)
        self._check(self.item_node, item, f"{self.answer_key}[{index}]")
        if self._is_stub(item):
            stubs = sum(1 for existing in self.items if self._is_stub(existing))
            if stubs >= STUB_LIMIT:
                self.refused[self.item_url(item) or json.dumps(item, sort_keys=True)] = item
                raise StoreError(
                    f"Refused: already {stubs} items whose own page was not read; read the item pages, then add "
                    "them with their details (the refused item is remembered)."
                )
        self.items.append(item)
        url = self.item_url(item)
        if url is not None:
            self.refused.pop(url, None)
        return index

    def _merge(self, index: int, fields: dict[str, Any]) -> None:
        self._check_index(index)
        assert self.item_node is not None
        current = self.items[index]
        if not isinstance(current, dict):
            raise StoreError("update_item works on object items; use remove_items and add_item for plain values.")
        merged = coerce(self.item_node, {**current, **fields})
        self._check(self.item_node, merged, f"{self.answer_key}[{index}]")
        self.items[index] = merged

    def _check_index(self, index: int) -> None:
        if not 0 <= index < len(self.items):
            raise StoreError(f"There is no item #{index}; the store holds {len(self.items)} item(s).")

    def _load_array(self, name: str) -> list[Any]:
        path = self._resolve_file(name)
        try:
            value = json.loads(path.read_text("utf-8"))
        except FileNotFoundError:
            raise StoreError(f"There is no saved file named {name}.") from None
        except (OSError, ValueError) as exc:
            raise StoreError(f"{name} is not a readable JSON file: {exc}.") from None
        if isinstance(value, dict) and self.answer_key and isinstance(value.get(self.answer_key), list):
            value = value[self.answer_key]
        if not isinstance(value, list):
            raise StoreError(f"{name} must hold a JSON array.")
        return value

    def _written(self, message: str) -> str:
        self.version += 1
        self._mirror()
        return f"{message} {self.coverage()}"

    def _mirror(self) -> None:
        if self._files_dir is None:
            return
        self._files_dir.mkdir(parents=True, exist_ok=True)
        target = self._files_dir / OUTPUT_FILE
        temp = target.with_suffix(".json.tmp")
        temp.write_text(json.dumps(self._content, ensure_ascii=False, indent=1), "utf-8")
        os.replace(temp, target)


def _enum_values(node: Node, value: Any, path: str) -> Iterator[tuple[str, str]]:
    if node.enum is not None and isinstance(value, str):
        yield path, value
    elif node.kind == "object" and isinstance(value, dict):
        for name, spec in node.fields.items():
            if name in value:
                yield from _enum_values(spec.node, value[name], f"{path}.{name}")
    elif node.kind == "array" and isinstance(value, list) and node.items is not None:
        for i, entry in enumerate(value):
            yield from _enum_values(node.items, entry, f"{path}[{i}]")


def _elided(value: Any) -> Any:
    if isinstance(value, str) and len(value) > ELIDE_OVER:
        return f"<{len(value)} chars>"
    if isinstance(value, dict):
        return {k: _elided(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_elided(v) for v in value]
    return value


def _only(item: Any, fields: Sequence[str] | None) -> Any:
    if not fields or not isinstance(item, dict):
        return item
    return {k: v for k, v in item.items() if k in fields}


def _as_dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {"value": value}


def _problems(problems: list[str]) -> str:
    if not problems:
        return ""
    more = f" (+{len(problems) - 8} more)" if len(problems) > 8 else ""
    return " Not applied: " + " | ".join(problems[:8]) + more + "."
