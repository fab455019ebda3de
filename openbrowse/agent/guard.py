"""The guard layer (spec §12.2), installed last so it wraps the final version of every listed action.

* Back-references: an output over 500 characters whose whitespace-normalised hash was already shown this
  session is replaced by a pointer to the earlier output (and its readout file, if any).
* Caps: for the data-heavy actions, an output over 8000 characters is saved in full to
  ``readout_<action>_<n>.txt`` and replaced by a preview (JSON with long strings elided if that fits in 16 000
  characters, else the first 8000 characters) plus a note naming the file.
* Repeat breaker: the same action returning identical output, or the identical error, on two consecutive calls
  gets a "stop repeating this" note.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from browser_use.agent.views import ActionResult

from openbrowse.agent.files.delivery import save
from openbrowse.upstream.registered_actions import registered_actions, wrap_action

if TYPE_CHECKING:
    from browser_use import Tools

logger = logging.getLogger(__name__)

CAPPED_ACTIONS = frozenset(
    {"find_elements", "search_page", "evaluate", "find_links", "http_fetch", "run_code_file", "read_pages"}
)
DEDUPE_ONLY_ACTIONS = frozenset({"read_output", "search_output", "recall"})
BACKREF_MIN_CHARS = 500
CAP_CHARS = 8000
ELIDED_PREVIEW_CHARS = 16000
ELIDE_STRINGS_OVER = 200
REPEAT_NOTE = (
    "\n[This is the same result as your previous {action} call: stop repeating this; change the arguments or "
    "take a different approach.]"
)


def fingerprint(text: str) -> str:
    return hashlib.sha1(" ".join(text.split()).encode("utf-8")).hexdigest()


def elide_long_strings(value: Any, limit: int = ELIDE_STRINGS_OVER) -> Any:
    if isinstance(value, str):
        return f"<{len(value)} chars>" if len(value) > limit else value
    if isinstance(value, list):
        return [elide_long_strings(item, limit) for item in value]
    if isinstance(value, dict):
        return {key: elide_long_strings(item, limit) for key, item in value.items()}
    return value


def preview(text: str) -> str:
    """JSON with long strings elided when that fits in 16 000 characters, else the first 8000 characters."""
    try:
        parsed = json.loads(text)
    except ValueError:
        parsed = None
    if isinstance(parsed, dict | list):
        elided = json.dumps(elide_long_strings(parsed), ensure_ascii=False)
        if len(elided) <= ELIDED_PREVIEW_CHARS:
            return elided
    return text[:CAP_CHARS]


@dataclass
class _Shown:
    number: int
    readout: str | None


@dataclass
class Guard:
    """Per-session memory of what the model was shown; one instance wraps all actions of one agent."""

    files_dir: Path
    shown: dict[str, _Shown] = field(default_factory=dict)
    readouts: dict[str, int] = field(default_factory=dict)
    last: dict[str, str] = field(default_factory=dict)
    outputs: int = 0

    def filter_output(self, action: str, text: str, file_system: Any) -> str:
        key = fingerprint(text)
        repeated = self.last.get(action) == key
        self.last[action] = key
        if len(text) > BACKREF_MIN_CHARS:
            earlier = self.shown.get(key)
            if earlier is not None:
                where = f" The full text is in {earlier.readout}." if earlier.readout else ""
                text = f"[identical to earlier output #{earlier.number} — not repeated; refer back to it.{where}]"
            else:
                self.outputs += 1
                readout = None
                if action in CAPPED_ACTIONS and len(text) > CAP_CHARS:
                    readout, text = self._cap(action, text, file_system)
                self.shown[key] = _Shown(self.outputs, readout)
        if repeated:
            text += REPEAT_NOTE.format(action=action)
        return text

    def _cap(self, action: str, text: str, file_system: Any) -> tuple[str, str]:
        number = self.readouts.get(action, 0) + 1
        self.readouts[action] = number
        name = f"readout_{action}_{number}.txt"
        save(self.files_dir, name, text, file_system)
        note = (
            f"\n[Output of {len(text)} chars capped; the full text is saved as {name}. Use read_file('{name}') "
            "or a narrower query instead of repeating this call.]"
        )
        return name, preview(text) + note

    def filter_error(self, action: str, message: str) -> str | None:
        """A repeat note for an error identical to this action's previous outcome, else None."""
        key = "error:" + fingerprint(message)
        repeated = self.last.get(action) == key
        self.last[action] = key
        return REPEAT_NOTE.format(action=action).strip() if repeated else None

    def wrap(self, action: str, function: Callable[..., Awaitable[Any]]) -> Callable[..., Awaitable[Any]]:
        @functools.wraps(function)
        async def guarded(*args: Any, **kwargs: Any) -> Any:
            try:
                result = await function(*args, **kwargs)
            except Exception as exc:
                note = self.filter_error(action, str(exc))
                if note is None:
                    raise
                raise RuntimeError(f"{exc} {note}") from exc
            if isinstance(result, ActionResult):
                if result.error:
                    note = self.filter_error(action, result.error)
                    if note:
                        result.error = f"{result.error} {note}"
                elif result.extracted_content:
                    original = result.extracted_content
                    result.extracted_content = self.filter_output(action, original, kwargs.get("file_system"))
                    if result.long_term_memory == original:
                        result.long_term_memory = result.extracted_content
            return result

        return guarded


def install_guard(tools: Tools[Any], files_dir: Path) -> Guard:
    """Wrap every listed action currently registered; call after all tools are registered."""
    guard = Guard(files_dir)
    for name in list(registered_actions(tools)):
        if name in CAPPED_ACTIONS or name in DEDUPE_ONLY_ACTIONS:
            wrap_action(tools, name, functools.partial(guard.wrap, name))
    return guard
