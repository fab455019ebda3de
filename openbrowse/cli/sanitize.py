"""Text from the server is page-derived: before the terminal sees it, its control characters go (spec §25.4).

A page (or a model repeating one) can put terminal escape sequences in a feed summary, a title or the output:
``ESC ] 0 ; … BEL`` retitles the window, ``ESC [ 2 J`` clears the screen, OSC 52 writes the clipboard, and the
bidi overrides make text read differently than it is. Rich prints ESC as it is, so every string the CLI shows
from the server passes :func:`terminal_safe` first: whole escape sequences are removed (their payload too), then
every remaining C0 and C1 control except newline and tab, DEL, and the bidi embedding, override and isolate
characters.
"""

from __future__ import annotations

import json
import re
from typing import Any

__all__ = ["terminal_safe", "terminal_safe_json"]

_ESCAPE_SEQUENCES = re.compile(
    r"""
    (?:\x1b\]|\x9d)[^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)?      # OSC … BEL/ST (window title, clipboard, links)
    | (?:\x1b[PX^_]|[\x90\x98\x9e\x9f])[^\x1b\x9c]*(?:\x1b\\|\x9c)?  # DCS, SOS, PM, APC … ST
    | (?:\x1b\[|\x9b)[0-?]*[ -/]*[@-~]?                      # CSI (cursor, erase, colours)
    | \x1b[ -/]*[0-~]?                                        # any other escape (ESC c resets the terminal)
    """,
    re.VERBOSE,
)
_BIDI_CONTROLS = "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
_RAW_IN_JSON = re.compile(f"[\x7f-\x9f{_BIDI_CONTROLS}]")
_DROPPED = {
    code: None
    for code in [*range(0x20), 0x7F, *range(0x80, 0xA0), *map(ord, _BIDI_CONTROLS)]
    if code not in (0x09, 0x0A)
}


def terminal_safe(text: str) -> str:
    """``text`` without escape sequences, control characters (but newline and tab) or bidi controls."""
    if text.isprintable():
        return text  # the common case, and nothing to strip: no control or format character at all
    return _ESCAPE_SEQUENCES.sub("", text.replace("\r\n", "\n")).translate(_DROPPED)


def terminal_safe_json(value: Any) -> str:
    """``value`` as indented JSON that keeps every character (non-ASCII text readable) yet is safe to print.

    ``json.dumps`` escapes C0 controls itself; DEL, C1 and the bidi controls, which it leaves raw, are written as
    ``\\uXXXX`` escapes too: the same JSON value, nothing a terminal acts on.
    """
    text = json.dumps(value, indent=2, ensure_ascii=False)
    return _RAW_IN_JSON.sub(lambda found: f"\\u{ord(found.group()):04x}", text)
