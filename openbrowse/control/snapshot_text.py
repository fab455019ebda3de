"""Snapshot text: reading Playwright's aria snapshot lines, giving them refs, and shaping the output (spec §20.2).

Pure functions, no browser. An ai snapshot already carries Playwright's refs (``[ref=e5]``, ``[ref=f1e2]`` inside
iframes); a role snapshot is built here from a default-mode aria snapshot, giving ``eN`` refs to interactive
elements and to named content, with ``nth`` where a role and name repeat (``get_by_role(...).nth(n)`` finds it).
Then :func:`finalize` marks ``[new]`` lines, applies the character budget and counts what is left.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "CONTENT_ROLES",
    "INTERACTIVE_ROLES",
    "STRUCTURAL_ROLES",
    "TRUNCATION_MARKER",
    "Finalized",
    "RefInfo",
    "SnapshotLine",
    "build_ai",
    "build_role",
    "finalize",
    "identity_key",
    "parse_line",
]

INTERACTIVE_ROLES = frozenset(
    [
        "button",
        "checkbox",
        "combobox",
        "link",
        "listbox",
        "menuitem",
        "menuitemcheckbox",
        "menuitemradio",
        "option",
        "radio",
        "searchbox",
        "slider",
        "spinbutton",
        "switch",
        "tab",
        "textbox",
        "treeitem",
    ]
)
CONTENT_ROLES = frozenset(
    ["article", "cell", "columnheader", "gridcell", "heading", "listitem", "main", "navigation", "region", "rowheader"]
)
STRUCTURAL_ROLES = frozenset(
    [
        "application",
        "directory",
        "document",
        "generic",
        "grid",
        "group",
        "ignored",
        "list",
        "menu",
        "menubar",
        "none",
        "presentation",
        "row",
        "rowgroup",
        "table",
        "tablist",
        "toolbar",
        "tree",
        "treegrid",
    ]
)
TRUNCATION_MARKER = "[...TRUNCATED - page too large]"

_ENTRY = re.compile(r"^(\s*)- (.*)$", re.S)
_HEAD = re.compile(r'^([A-Za-z]\w*)(?: ("(?:\\.|[^"\\])*"))?(.*)$', re.S)
_ATTRIBUTES = re.compile(r"^(?:\s*\[[^\[\]]*\])*")
_REF = re.compile(r"\[ref=([^\[\]]+)\]")


@dataclass(frozen=True, slots=True)
class SnapshotLine:
    indent: int
    role: str
    name: str | None
    ref: str | None
    attributes: str
    """The ``[..]`` groups after the name (``[checked] [ref=e4]``), without the inline text after the colon."""


RefInfo = dict[str, Any]
"""What the wire shows of a ref: ``{role, name?, nth?}``."""


def parse_line(line: str) -> SnapshotLine | None:
    """One ``- role "name" [attr] [ref=eN]: text`` line, or None for anything else (``- /url: ...``, text)."""
    entry = _ENTRY.match(line)
    if entry is None:
        return None
    content = entry.group(2)
    if content.startswith("'"):  # YAML-quoted when the line holds characters YAML would misread
        closing = content.rfind("'")
        if closing > 0:
            content = content[1:closing].replace("''", "'") + content[closing + 1 :]
    head = _HEAD.match(content)
    if head is None:
        return None
    role, name_token, rest = head.groups()
    attributes = _ATTRIBUTES.match(rest)
    attribute_text = attributes.group(0) if attributes else ""
    ref = _REF.search(attribute_text)
    name: str | None = None
    if name_token is not None:
        try:
            name = str(json.loads(name_token))
        except ValueError:
            name = name_token[1:-1]
    indent = len(entry.group(1)) // 2
    return SnapshotLine(indent, role.lower(), name, ref.group(1) if ref else None, attribute_text.strip())


@dataclass(slots=True)
class Built:
    snapshot: str
    refs: dict[str, RefInfo] = field(default_factory=dict)


def build_ai(text: str, *, interactive: bool = False, compact: bool = False, max_depth: int | None = None) -> Built:
    """Refs of an ai snapshot as Playwright numbered them; the options filter lines but keep those refs."""
    refs: dict[str, RefInfo] = {}
    kept: list[str] = []
    for line in text.splitlines():
        if max_depth is not None and _indent(line) > max_depth:
            continue
        parsed = parse_line(line)
        if parsed is None or parsed.ref is None:
            if not interactive:
                kept.append(line)
            continue
        if interactive and parsed.role not in INTERACTIVE_ROLES:
            continue
        refs[parsed.ref] = _info(parsed.role, parsed.name)
        kept.append(_flat(parsed) if interactive else line)
    if compact and not interactive:
        kept = _compact(kept)
    return Built("\n".join(kept) or ("(no interactive elements)" if interactive else "(empty)"), refs)


def build_role(text: str, *, interactive: bool = False, compact: bool = False, max_depth: int | None = None) -> Built:
    """A role snapshot of a default-mode aria snapshot: ``[ref=eN]`` (and ``[nth=k]``) appended to the lines."""
    parsed_lines = [(line, parse_line(line)) for line in text.splitlines()]
    seen: dict[tuple[str, str | None], int] = {}
    numbered: list[tuple[str, SnapshotLine | None, str | None, int]] = []
    refs: dict[str, RefInfo] = {}
    for line, parsed in parsed_lines:
        ref: str | None = None
        nth = 0
        if parsed is not None and _deserves_ref(parsed):
            # nth counts every match get_by_role will see, including lines the options later drop.
            nth = seen.get((parsed.role, parsed.name), 0)
            seen[(parsed.role, parsed.name)] = nth + 1
            ref = f"e{len(refs) + 1}"
            refs[ref] = {**_info(parsed.role, parsed.name), "nth": nth}
        numbered.append((line, parsed, ref, nth))
    for info in refs.values():
        if seen[(info["role"], info.get("name"))] == 1:
            del info["nth"]
    kept: list[str] = []
    for line, parsed, ref, nth in numbered:
        if max_depth is not None and _indent(line) > max_depth:
            continue
        if interactive:
            if parsed is not None and ref is not None and parsed.role in INTERACTIVE_ROLES:
                kept.append(_flat(parsed) + _ref_suffix(ref, nth))
            continue
        if compact and parsed is not None and parsed.role in STRUCTURAL_ROLES and not parsed.name and ref is None:
            continue
        kept.append(_with_ref(line, ref, nth) if ref is not None else line)
    if compact and not interactive:
        kept = _compact(kept)
    visible = {found.ref for found in map(parse_line, kept) if found is not None and found.ref}
    refs = {ref: info for ref, info in refs.items() if ref in visible}
    return Built("\n".join(kept) or ("(no interactive elements)" if interactive else "(empty)"), refs)


def _indent(line: str) -> int:
    return (len(line) - len(line.lstrip(" "))) // 2


def _deserves_ref(line: SnapshotLine) -> bool:
    return line.role in INTERACTIVE_ROLES or (line.role in CONTENT_ROLES and bool(line.name))


def _info(role: str, name: str | None) -> RefInfo:
    return {"role": role, "name": name} if name else {"role": role}


def _flat(line: SnapshotLine) -> str:
    name = f" {json.dumps(line.name, ensure_ascii=False)}" if line.name else ""
    return f"- {line.role}{name}{' ' + line.attributes if line.attributes else ''}"


def _ref_suffix(ref: str, nth: int) -> str:
    return f" [ref={ref}]" + (f" [nth={nth}]" if nth else "")


def _with_ref(line: str, ref: str, nth: int) -> str:
    """Insert the ref before the inline text (``- button "Go" [ref=e3]: more``) or at the end."""
    entry = _ENTRY.match(line)
    parsed = parse_line(line)
    if entry is None or parsed is None:
        return line + _ref_suffix(ref, nth)
    head = entry.group(2)
    colon = _inline_colon(head)
    if colon is None:
        return line + _ref_suffix(ref, nth)
    return f"{entry.group(1)}- {head[:colon]}{_ref_suffix(ref, nth)}{head[colon:]}"


def _inline_colon(head: str) -> int | None:
    """Where ``: text`` (or a trailing ``:``) starts in a line's content, outside the quoted name."""
    in_quotes = escaped = False
    for index, char in enumerate(head):
        if escaped:
            escaped = False
        elif char == "\\":
            escaped = True
        elif char == '"':
            in_quotes = not in_quotes
        elif char == ":" and not in_quotes and (index + 1 == len(head) or head[index + 1] == " "):
            return index
    return None


def _compact(lines: list[str]) -> list[str]:
    """Keep lines with a ref or inline text, and the ancestors of those; drop empty containers."""
    keep = [False] * len(lines)
    stack: list[tuple[int, int]] = []  # (indent, index)
    for index, line in enumerate(lines):
        indent = _indent(line)
        while stack and stack[-1][0] >= indent:
            stack.pop()
        parsed = parse_line(line)
        stripped = line.rstrip()
        has_ref = parsed is not None and parsed.ref is not None
        if has_ref or (":" in stripped and not stripped.endswith(":")):
            keep[index] = True
            if has_ref:
                for _, ancestor in stack:
                    keep[ancestor] = True
        stack.append((indent, index))
    return [line for line, kept in zip(lines, keep, strict=True) if kept]


def identity_key(ref: str, info: Mapping[str, Any], mode: str) -> str:
    """What makes an element "the same" across snapshots: Playwright's ref in aria mode, else role, name and nth."""
    if mode == "aria":
        return ref
    return f"{info.get('role', '')}\0{info.get('name', '')}\0{info.get('nth', 0)}"


@dataclass(slots=True)
class Finalized:
    snapshot: str
    refs: dict[str, RefInfo]
    stats: dict[str, int]
    keys: set[str]
    """Identity keys of every ref of the snapshot (the next snapshot's baseline)."""
    truncated: bool = False
    new_elements: int | None = None


def finalize(built: Built, *, mode: str, max_chars: int | None, previous: Iterable[str] | None) -> Finalized:
    """Mark ``[new]`` against ``previous`` keys (None: no baseline), truncate to ``max_chars``, count."""
    lines = built.snapshot.split("\n")
    keys = {identity_key(ref, info, mode) for ref, info in built.refs.items()}
    new_elements: int | None = None
    if previous is not None:
        before = set(previous)
        marked: set[str] = set()
        for index, line in enumerate(lines):
            parsed = parse_line(line)
            info = built.refs.get(parsed.ref) if parsed is not None and parsed.ref else None
            if parsed is None or parsed.ref is None or info is None:
                continue
            key = identity_key(parsed.ref, info, mode)
            if key not in before:
                lines[index] = f"{line} [new]"
                marked.add(key)
        new_elements = len(marked)
        if marked:
            lines.append(f"{len(marked)} new element(s) since last snapshot")
    text = "\n".join(lines)
    truncated = max_chars is not None and max_chars > 0 and len(text) > max_chars
    if truncated:
        assert max_chars is not None
        text, lines = _truncate(lines, max_chars)
    visible = {parsed.ref for parsed in map(parse_line, lines) if parsed is not None and parsed.ref}
    refs = {ref: info for ref, info in built.refs.items() if ref in visible}
    stats = {
        "lines": len(text.split("\n")) if text else 0,
        "chars": len(text),
        "refs": len(refs),
        "interactive": sum(1 for info in refs.values() if info.get("role") in INTERACTIVE_ROLES),
    }
    return Finalized(text, refs, stats, keys, truncated, new_elements)


def _truncate(lines: list[str], max_chars: int) -> tuple[str, list[str]]:
    marker = TRUNCATION_MARKER if max_chars > len(TRUNCATION_MARKER) else "…"
    kept: list[str] = []
    size = 0
    for line in lines:
        grown = size + len(line) + (1 if kept else 0)
        if grown + 2 + len(marker) > max_chars:
            break
        kept.append(line)
        size = grown
    text = "\n".join(kept) + "\n\n" + marker if kept else marker
    return text, kept
