"""How the command line shows things: feed lines, the live progress line, tables, the final output.

Every string from the server is page-derived: it passes :func:`terminal_safe` and goes into a :class:`Text`
(never through Rich markup), so a page can neither send escape sequences to the terminal nor style the output.
"""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime
from typing import Any

from rich.console import Console, Group, RenderableType
from rich.spinner import Spinner
from rich.table import Table
from rich.text import Text

from openbrowse.cli.sanitize import terminal_safe, terminal_safe_json

RESTING = frozenset({"idle", "stopped", "timed_out", "error", "expired"})

_TYPE_STYLES = {
    "user_message": ("›", "bold"),
    "planning": ("•", "dim"),
    "browser_action": ("→", ""),
    "result": ("✓", "green"),
    "browser_action_error": ("✗", "red"),
    "completion": ("■", "bold"),
}
_CATEGORY_STYLES = {
    "goal": "cyan",
    "reasoning": "dim italic",
    "judge": "magenta",
    "system": "yellow",
    "schema": "blue",
}


def _data(message: dict[str, Any]) -> dict[str, Any]:
    try:
        value = json.loads(message.get("data") or "{}")
    except json.JSONDecodeError:
        return {}
    return value if isinstance(value, dict) else {}


def cell(value: object) -> Text:
    """A server-provided value for a table cell or a line: control characters stripped, no markup."""
    return Text("" if value is None else terminal_safe(str(value)))


def message_line(message: dict[str, Any]) -> Text:
    """One feed row as one line: a mark, the step number when there is one, and the summary."""
    kind = message.get("type", "")
    data = _data(message)
    summary = terminal_safe(str(message.get("summary", "")))
    if kind == "event":
        category = terminal_safe(str(data.get("category", "")))
        style = _CATEGORY_STYLES.get(category, "")
        return Text.assemble(("  ◦ ", style), (f"{category}: " if category else "", style), (summary, style))
    mark, style = _TYPE_STYLES.get(kind, ("•", ""))
    step = data.get("step")
    prefix = f"[{step}] " if isinstance(step, int) else ""
    return Text.assemble((f"{mark} ", style), (prefix, "dim"), (summary, style))


class ProgressLine:
    """The live line under the feed: spinner, status, step, what the agent is doing and for how long, cost."""

    def __init__(self) -> None:
        self.status: dict[str, Any] = {}
        self.activity: dict[str, Any] | None = None
        self._activity_since = time.monotonic()

    def update_status(self, status: dict[str, Any]) -> None:
        self.status = status
        self.update_activity(status.get("activity"))

    def update_activity(self, activity: dict[str, Any] | None) -> None:
        if activity != self.activity:
            seconds = float(activity.get("seconds") or 0) if activity else 0.0
            self._activity_since = time.monotonic() - seconds
        self.activity = activity

    def text(self) -> Text:
        status = terminal_safe(str(self.status.get("status", "connecting")))
        parts = [Text(status, style="bold")]
        step = (self.activity or {}).get("step")
        steps = self.status.get("stepCount")
        if step:
            parts.append(Text(f"step {terminal_safe(str(step))}"))
        elif steps:
            parts.append(Text(_plural(steps, "step")))
        if self.activity:
            elapsed = time.monotonic() - self._activity_since
            label = terminal_safe(str(self.activity.get("label", "")))
            parts.append(Text(f"{label} {elapsed:.0f}s", style="cyan"))
        cost = self.status.get("totalCostUsd")
        if cost and cost != "0":
            parts.append(Text(f"${terminal_safe(str(cost))}", style="dim"))
        return Text(" · ").join(parts)

    def __rich__(self) -> RenderableType:
        stream = (self.activity or {}).get("stream")
        line = Spinner("dots", text=self.text())
        if stream:
            tail = terminal_safe(str(stream)).strip().splitlines()[-1:] or [""]
            return Group(line, Text(f"  {tail[0][:160]}", style="dim italic"))
        return line


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"


def age(created_at: str | None) -> str:
    if not created_at:
        return ""
    seconds = (datetime.now(UTC) - datetime.fromisoformat(created_at)).total_seconds()
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{int(seconds // size)}{unit}"
    return f"{int(max(seconds, 0))}s"


def sessions_table(sessions: list[dict[str, Any]], total: int, page: int) -> Table:
    table = Table(title=f"Sessions (page {page}, {total} in all)", title_justify="left", expand=False)
    for column in ("id", "status", "model", "steps", "cost $", "age", "task"):
        table.add_column(column, no_wrap=column != "task", overflow="ellipsis")
    for session in sessions:
        table.add_row(
            cell(session["id"]),
            cell(session["status"]),
            cell(session["model"]),
            cell(session.get("stepCount", 0)),
            cell(session.get("totalCostUsd", "0")),
            age(session.get("createdAt")),
            cell(terminal_safe(session.get("title") or "")[:60]),
        )
    return table


def session_table(session: dict[str, Any]) -> Table:
    table = Table(show_header=False, box=None, pad_edge=False)
    table.add_column(style="bold")
    table.add_column()
    for key in (
        "id",
        "status",
        "model",
        "reasoningEffort",
        "title",
        "keepAlive",
        "stepCount",
        "lastStepSummary",
        "isTaskSuccessful",
        "failureKind",
        "totalCostUsd",
        "maxCostUsd",
        "liveUrl",
        "profileId",
        "createdAt",
        "updatedAt",
    ):
        table.add_row(key, cell(session.get(key)))
    return table


def browsers_table(browsers: list[dict[str, Any]], total: int) -> Table:
    table = Table(title=f"Browsers ({total} in all)", title_justify="left")
    for column in ("id", "status", "started", "timeout at", "cdpUrl", "liveUrl"):
        table.add_column(column, overflow="fold")
    for browser in browsers:
        table.add_row(
            cell(browser["id"]),
            cell(browser["status"]),
            age(browser.get("startedAt")),
            cell(browser.get("timeoutAt")),
            cell(browser.get("cdpUrl")),
            cell(browser.get("liveUrl")),
        )
    return table


def output_text(output: Any, *, as_json: bool) -> str | None:
    """The session's output for stdout: JSON when a schema was given (or the output is not text)."""
    if output is None:
        return None
    if as_json or not isinstance(output, str):
        return terminal_safe_json(output)
    return terminal_safe(output)


def outcome_line(session: dict[str, Any]) -> Text:
    ok = session.get("isTaskSuccessful") is True
    verdict = Text("succeeded" if ok else "did not succeed", style="green" if ok else "red")
    steps = _plural(int(session.get("stepCount") or 0), "step")
    details = terminal_safe(f" · {session.get('status')} · {steps} · ${session.get('totalCostUsd', '0')}")
    summary = terminal_safe(str(session.get("lastStepSummary") or ""))
    return Text.assemble("Task ", verdict, details, f"\n{summary}" if summary and not ok else "")


def stderr_console() -> Console:
    return Console(stderr=True, highlight=False)
