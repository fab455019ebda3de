"""Draft rows (spec §11.2): one deterministic row per page read, derived from its JSON-LD and its visible text.

How a row is filled:

* the item's own-URL field takes the page URL;
* JSON-LD is flattened to dotted paths of scalars (``jobLocation.address.addressLocality``, list indices
  dropped) and each schema field takes the best path by name tokens: the leaf named like the field, then a leaf
  whose tokens contain the field's (``employmentType`` → ``employment``), then a path whose ancestors carry the
  name (``jobLocation.address.addressLocality`` → ``location``) or a related word (``hiringOrganization.name`` →
  ``company``) — through ancestors only onto a naming leaf (``name``, ``locality``…), never onto ``latitude``;
* an enum field only takes a value that maps onto one of its choices (``FULL_TIME`` → ``Full-time``), and when no
  named path gives one, a JSON-LD value that maps onto exactly one choice;
* labelled specs of the visible text (``Location: Berlin``, or a two-cell table row) fill what JSON-LD left;
* strings are HTML-stripped, then every value is offered to the store's own validation: a refused value leaves
  the field empty, as does anything unknown.
"""

from __future__ import annotations

import html
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from openbrowse.agent.structured.schema_model import Node

MIN_TEXT_CHARS = 200
Accept = Callable[[str, Any], bool]
"""The store's own check of one item field: ``accept(field, value)``."""

_WORDS = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")
_TAG = re.compile(r"<[A-Za-z/!][^>]*>")
_SPACE = re.compile(r"\s+")
_LABELLED = re.compile(r"^\s*([A-Za-z][A-Za-z /&()'.-]{0,40}?)\s*(?::|\t)\s*(\S.{0,400}?)\s*$")
_INTEGER = re.compile(r"^-?\d+$")
_NUMBER = re.compile(r"^-?\d+(?:\.\d+)?$")
_SCHEMA_ORG = re.compile(r"^https?://schema\.org/", re.IGNORECASE)

RELATED: dict[str, tuple[str, ...]] = {
    "location": ("locality", "city", "place", "address", "region", "country"),
    "city": ("locality", "town"),
    "town": ("locality", "city"),
    "country": ("nation",),
    "company": ("organization", "employer", "brand"),
    "employer": ("organization", "company"),
    "organization": ("company", "employer"),
    "brand": ("manufacturer",),
}
"""Words that name the same thing, most specific first (the first one wins a tie)."""
NAMING_LEAVES = frozenset({"name", "title", "value", "text", "label"})
_UNRELATED = 99


def words(name: str) -> tuple[str, ...]:
    """Lower-case name tokens of camelCase / snake_case / dotted names, a trailing plural ``s`` dropped."""
    return tuple(_singular(w.lower()) for w in _WORDS.findall(name))


def _singular(word: str) -> str:
    return word[:-1] if len(word) > 3 and word.endswith("s") and not word.endswith("ss") else word


def _squash(value: str) -> str:
    return re.sub(r"[^a-z0-9]", "", value.lower())


# -- JSON-LD ----------------------------------------------------------------------------------------------------
def entities(jsonld: Any) -> list[dict[str, Any]]:
    """The top-level JSON-LD objects: blocks, list entries and ``@graph`` members, in document order."""
    if isinstance(jsonld, list):
        return [entity for inner in jsonld for entity in entities(inner)]
    if isinstance(jsonld, dict):
        graph = jsonld.get("@graph")
        rest = {k: v for k, v in jsonld.items() if k != "@graph" and not k.startswith("@")}
        return ([jsonld] if rest or graph is None else []) + (entities(graph) if graph is not None else [])
    return []


def flatten(jsonld: Any) -> list[tuple[str, Any]]:
    """Every scalar (or list of scalars) of a JSON-LD object as ``(dotted path, value)`` in document order;
    ``@`` keys skipped, list indices and ``@graph`` wrappers dropped, the first value of a repeated path kept."""
    found: dict[str, Any] = {}
    for path, value in _walk(jsonld, ()):
        found.setdefault(".".join(path), value)
    return [(path, value) for path, value in found.items() if path]


def main_entity_first(jsonld: Any, fields: list[str]) -> list[list[tuple[str, Any]]]:
    """The flattened entities, the one naming the most schema fields by its own keys first (a page's
    ``Organization`` or ``BreadcrumbList`` block never outranks its ``JobPosting``)."""
    flat = [flatten({k: v for k, v in e.items() if k != "@graph"}) for e in entities(jsonld)]

    def named(paths: list[tuple[str, Any]]) -> int:
        return sum(1 for f in fields if any((m := match(f, p)) is not None and m.level <= 1 for p, _ in paths))

    return sorted(flat, key=lambda paths: -named(paths))


def _walk(value: Any, path: tuple[str, ...]) -> Iterator[tuple[tuple[str, ...], Any]]:
    if isinstance(value, dict):
        for key, inner in value.items():
            if key == "@graph":
                yield from _walk(inner, path)
            elif isinstance(key, str) and not key.startswith("@"):
                yield from _walk(inner, (*path, key))
    elif isinstance(value, list):
        scalars = [v for v in value if _is_scalar(v)]
        if path and scalars and len(scalars) == len(value):
            yield path, scalars
        else:
            for inner in value:
                yield from _walk(inner, path)
    elif _is_scalar(value) and path:
        yield path, value


def _is_scalar(value: Any) -> bool:
    return isinstance(value, str | int | float | bool)


@dataclass(frozen=True, order=True)
class Match:
    """How well a path (or a label) names a field; a smaller tuple is a better match."""

    level: int
    related_rank: int
    depth: int
    entity: int
    position: int


def match(field: str, path: str, position: int = 0, entity: int = 0) -> Match | None:
    """The match of a dotted ``path`` (or a label) to ``field``, or None when the names do not meet."""
    wanted = words(field)
    segments = [s for s in path.split(".") if s]
    if not wanted or not segments:
        return None
    leaf = words(segments[-1])
    every = {w for segment in segments for w in words(segment)}
    rank = _related_rank(wanted, leaf)
    depth = len(segments)
    if _squash(segments[-1]) == _squash(field):
        return Match(0, rank, depth, entity, position)
    if set(wanted) <= set(leaf):
        return Match(1, rank, depth, entity, position)
    names_leaf = rank < _UNRELATED or bool(set(leaf) & NAMING_LEAVES)
    if set(wanted) <= every and names_leaf:
        return Match(2, rank, depth, entity, position)
    if all(w in leaf or _related(w) & set(leaf) for w in wanted):
        return Match(3, rank, depth, entity, position)
    if all(w in every or _related(w) & every for w in wanted) and names_leaf:
        return Match(4, rank, depth, entity, position)
    return None


def _related(word: str) -> set[str]:
    return set(RELATED.get(word, ()))


def _related_rank(wanted: tuple[str, ...], leaf: tuple[str, ...]) -> int:
    ranks = [RELATED.get(w, ()).index(t) for w in wanted for t in leaf if t in RELATED.get(w, ())]
    return min(ranks, default=_UNRELATED)


# -- values ---------------------------------------------------------------------------------------------------
def clean_text(value: str) -> str:
    """HTML tags removed, entities decoded, whitespace collapsed."""
    if _TAG.search(value):
        value = _TAG.sub(" ", value)
    return _SPACE.sub(" ", html.unescape(value)).strip()


def enum_choice(node: Node, value: Any) -> str | None:
    """The enum choice ``value`` stands for (``FULL_TIME`` or ``https://schema.org/InStock`` included)."""
    if node.enum is None or not isinstance(value, str):
        return None
    key = _squash(_SCHEMA_ORG.sub("", value.strip()))
    if not key:
        return None
    hits = [choice for choice in node.enum if _squash(choice) == key]
    return hits[0] if len(hits) == 1 else None


def convert_value(node: Node, value: Any) -> Any:
    """``value`` in the shape ``node`` holds, or None when it does not convert without guessing."""
    if node.kind == "array":
        if node.items is None or node.items.kind in ("object", "array"):
            return None
        entries = value if isinstance(value, list) else [value]
        converted = [convert_value(node.items, v) for v in entries]
        return converted if converted and all(v is not None for v in converted) else None
    if isinstance(value, list):
        if node.enum is not None:
            choices = {enum_choice(node, v) for v in value} - {None}
            return choices.pop() if len(choices) == 1 else None
        value = ", ".join(str(v) for v in value if not isinstance(v, bool)) if node.kind == "string" else None
        if value is None:
            return None
    if node.enum is not None:
        return enum_choice(node, value)
    if node.kind == "string":
        if isinstance(value, bool):
            return "true" if value else "false"
        text = clean_text(str(value))
        return text or None
    if node.kind == "integer":
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        return int(value.strip()) if isinstance(value, str) and _INTEGER.match(value.strip()) else None
    if node.kind == "number":
        if isinstance(value, int | float) and not isinstance(value, bool):
            return value
        if isinstance(value, str) and _NUMBER.match(value.strip()):
            number = float(value.strip())
            return int(number) if number.is_integer() and "." not in value else number
        return None
    if node.kind == "boolean":
        if isinstance(value, bool):
            return value
        lowered = str(value).strip().lower()
        return {"true": True, "false": False, "yes": True, "no": False}.get(lowered)
    return None


# -- labelled specs -------------------------------------------------------------------------------------------
def labelled_specs(text: str) -> list[tuple[str, str]]:
    """``(label, value)`` pairs of lines like ``Location: Berlin`` or a two-cell table row, in text order."""
    pairs: list[tuple[str, str]] = []
    for line in text.splitlines():
        found = _LABELLED.match(line)
        if found and not found.group(2).startswith("//"):
            pairs.append((found.group(1).strip(), found.group(2).strip()))
    return pairs


# -- rows -----------------------------------------------------------------------------------------------------
def draft_row(item: Node, own_url: str | None, page: dict[str, Any], accept: Accept) -> dict[str, Any]:
    """The draft row of one page: every item field, the ones nothing fills left None."""
    row: dict[str, Any] = dict.fromkeys(item.fields)
    if own_url is not None and accept(own_url, page.get("url")):
        row[own_url] = page.get("url")
    ranked = main_entity_first(page.get("jsonld") or [], list(item.fields))
    scalars = [(path, value, rank) for rank, paths in enumerate(ranked) for path, value in paths]
    specs = labelled_specs(str(page.get("text") or ""))
    for name, spec in item.fields.items():
        if name == own_url or spec.node.kind == "object":
            continue
        for value in _candidates(name, spec.node, scalars, specs):
            if accept(name, value):
                row[name] = value
                break
    return row


def _candidates(
    name: str, node: Node, scalars: list[tuple[str, Any, int]], specs: list[tuple[str, str]]
) -> Iterator[Any]:
    ranked = sorted(
        (m, value) for i, (path, value, entity) in enumerate(scalars) if (m := match(name, path, i, entity)) is not None
    )
    for _, value in ranked:
        converted = convert_value(node, value)
        if converted is not None:
            yield converted
    labelled = sorted((m, value) for i, (label, value) in enumerate(specs) if (m := match(name, label, i)) is not None)
    for _, value in labelled:
        converted = convert_value(node, value)
        if converted is not None:
            yield converted
    if node.enum is not None:
        choices = {enum_choice(node, value) for _, value, _ in scalars if isinstance(value, str)} - {None}
        if len(choices) == 1:
            yield choices.pop()


def draft_rows(
    item: Node, own_url: str | None, pages: list[dict[str, Any]], accept: Accept
) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """Rows for the pages with at least 200 chars of text, and the row index of each page URL."""
    rows: list[dict[str, Any]] = []
    source: dict[str, int] = {}
    for page in pages:
        url = page.get("url")
        if not isinstance(url, str) or url in source or len(str(page.get("text") or "")) < MIN_TEXT_CHARS:
            continue
        source[url] = len(rows)
        rows.append(draft_row(item, own_url, page, accept))
    return rows, source
