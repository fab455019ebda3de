"""How ``openbrowse browser`` shows control API answers: tables for tabs and cookies, lines for logs and batches.

Everything here comes from web pages (titles, URLs, console text, cookie values), so every string goes through
:func:`terminal_safe` and into Rich :class:`Text`, never through markup (spec §25.4), as in ``render.py``.
"""

from __future__ import annotations

from typing import Any

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from openbrowse.cli.render import cell
from openbrowse.cli.sanitize import terminal_safe, terminal_safe_json

__all__ = [
    "act_outcome",
    "batch_lines",
    "cookies_table",
    "entry_lines",
    "file_lines",
    "pairs_table",
    "storage_table",
    "tabs_table",
    "value_text",
]

STATUS_KEYS = ("running", "engine", "attached", "controllable", "reason", "activeTargetId")
ENTRY_LISTS = ("entries", "messages", "errors", "requests")
"""Where a log route keeps its entries: ``entries`` in our spec, the other names in the seed's client."""


def pairs_table(body: dict[str, Any], keys: tuple[str, ...]) -> Table:
    """``key  value`` rows for the keys present in ``body``."""
    table = Table(show_header=False, box=None, pad_edge=False)
    table.add_column(style="bold")
    table.add_column(overflow="fold")
    for key in keys:
        if key in body:
            table.add_row(key, cell(body[key]))
    return table


def _titled(title: str, table: Table) -> RenderableType:
    """A heading line above the table (a Rich title would wrap at the table's width)."""
    return Group(Text(title, style="bold"), table)


def tabs_table(tabs: list[dict[str, Any]]) -> RenderableType:
    """Tabs with the handles ``--target-id`` takes: the tab id (t1), the label, the raw targetId."""
    table = Table()
    for column in ("tab", "label", "title", "url", "targetId"):
        table.add_column(column, overflow="fold")
    for tab in tabs:
        table.add_row(
            cell(tab.get("tabId")),
            cell(tab.get("label")),
            cell(terminal_safe(str(tab.get("title") or ""))[:60]),
            cell(tab.get("url")),
            cell(tab.get("targetId")),
        )
    return _titled(f"Tabs ({len(tabs)})", table)


def value_text(value: Any) -> str:
    """A result for stdout: text as it is (made safe), anything else as JSON."""
    if isinstance(value, str):
        return terminal_safe(value)
    return terminal_safe_json(value)


def act_outcome(body: dict[str, Any], done: str) -> tuple[str, str | None]:
    """The line for an act-like answer, and a note when a dialog blocked it (the action did not happen)."""
    if body.get("blockedByDialog"):
        pending = ((body.get("browserState") or {}).get("dialogs") or {}).get("pending") or []
        first = pending[0] if pending and isinstance(pending[0], dict) else {}
        dialog = terminal_safe(f"{first.get('type', 'dialog')} {first.get('message', '')!r}") if first else "a dialog"
        hint = "answer it with: openbrowse browser <id> dialog --accept|--dismiss"
        return "", f"blocked by {dialog} ({hint})"
    url = body.get("url")
    return (terminal_safe(f"{done} · {url}") if url else done), None


def batch_lines(body: dict[str, Any]) -> tuple[str, int]:
    """One line per batch entry and the abort summary; the count of failed entries."""
    lines: list[str] = []
    failed = 0
    for number, result in enumerate(body.get("results") or [], start=1):
        if not isinstance(result, dict) or not result.get("ok"):
            failed += 1
            error = result.get("error") if isinstance(result, dict) else result
            lines.append(f"{number}. failed: {terminal_safe(str(error))}")
        elif result.get("navigated"):
            lines.append(f"{number}. ok · navigated to {terminal_safe(str(result.get('url')))}")
        else:
            lines.append(f"{number}. ok")
    aborted = body.get("aborted")
    if isinstance(aborted, dict):
        summary = (
            f"stopped after action {aborted.get('afterAction')} ({aborted.get('reason')}), "
            f"{aborted.get('skipped')} skipped; take a new snapshot before dependent actions"
        )
        lines.append(terminal_safe(summary))
    return "\n".join(lines), failed


def _entry_line(entry: Any) -> str:
    if not isinstance(entry, dict):
        return terminal_safe(str(entry))
    if "method" in entry or "resourceType" in entry:  # a network request
        status = entry.get("status") or entry.get("failureText") or "…"
        return terminal_safe(f"{entry.get('method', 'GET')} {status} {entry.get('url', '')}")
    kind = entry.get("type") or entry.get("level") or entry.get("name") or "error"
    text = entry.get("text") or entry.get("message") or ""
    line = f"[{kind}] {text}"
    location = entry.get("location")
    if isinstance(location, dict) and location.get("url"):
        line += f" ({location.get('url')}:{location.get('lineNumber', '?')})"
    return terminal_safe(line)


def entry_lines(body: dict[str, Any]) -> str:
    """Console messages, page errors or requests, one a line; a word when there are none."""
    entries: list[Any] = next((body[name] for name in ENTRY_LISTS if isinstance(body.get(name), list)), [])
    return "\n".join(_entry_line(entry) for entry in entries) if entries else "(none)"


def file_lines(body: dict[str, Any], absolute_url: str | None) -> str:
    """Where a screenshot, PDF or download was saved: its path on the server's host and its files URL."""
    lines = [f"{key}: {terminal_safe(str(body[key]))}" for key in ("suggestedFilename", "size") if key in body]
    if body.get("path"):
        lines.append(f"path: {terminal_safe(str(body['path']))}")
    if absolute_url:
        lines.append(f"url: {terminal_safe(absolute_url)}")
    return "\n".join(lines)


def cookies_table(cookies: list[dict[str, Any]]) -> RenderableType:
    table = Table()
    for column in ("name", "value", "domain", "path", "expires", "flags"):
        table.add_column(column, overflow="fold")
    for cookie in cookies:
        flags = [flag for flag in ("httpOnly", "secure") if cookie.get(flag)]
        if cookie.get("sameSite"):
            flags.append(f"sameSite={cookie['sameSite']}")
        expires = cookie.get("expires")
        table.add_row(
            cell(cookie.get("name")),
            cell(terminal_safe(str(cookie.get("value") or ""))[:60]),
            cell(cookie.get("domain")),
            cell(cookie.get("path")),
            cell("session" if expires in (None, -1) else expires),
            cell(" ".join(flags)),
        )
    return _titled(f"Cookies ({len(cookies)})", table)


def storage_table(body: dict[str, Any]) -> RenderableType:
    items = body.get("items", body.get("values"))
    if isinstance(items, list):  # [{key, value}] rather than {key: value}
        items = {entry.get("key"): entry.get("value") for entry in items if isinstance(entry, dict)}
    if not isinstance(items, dict):
        items = {}
    origin = terminal_safe(str(body.get("origin") or ""))
    table = Table()
    table.add_column("key", overflow="fold")
    table.add_column("value", overflow="fold")
    for key, value in items.items():
        table.add_row(cell(key), cell(value))
    return _titled(f"{origin} ({len(items)} items)".strip(), table)
