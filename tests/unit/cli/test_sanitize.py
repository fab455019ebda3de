"""Page-derived text loses every terminal control before the CLI prints it (spec §25.4)."""

from __future__ import annotations

import io
import json

import pytest
from rich.console import Console

from openbrowse.cli.render import ProgressLine, message_line, output_text, session_table, sessions_table
from openbrowse.cli.sanitize import terminal_safe, terminal_safe_json

ATTACK = "\x1b]0;pwned\x07\x1b[2J"


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        (f"before{ATTACK}after", "beforeafter"),
        ("title\x1b]2;pwned\x1b\\ end", "title end"),  # OSC ended by ST
        ("copy\x1b]52;c;cHduZWQ=\x07 me", "copy me"),  # OSC 52: write the clipboard
        ("link \x1b]8;;https://evil.example/\x1b\\here\x1b]8;;\x1b\\", "link here"),
        ("\x1b[31mred\x1b[0m \x1b[?1049h\x1b[1;1H", "red "),
        ("reset\x1bc now \x1b(B", "reset now "),
        ("8-bit \x9b2J csi and \x9d0;pwned\x9c osc", "8-bit  csi and  osc"),
        ("dcs \x1bPq#0;2;0;0;0\x1b\\ gone", "dcs  gone"),
        ("bell\x07 back\x08space del\x7f nul\x00 cr\rlf", "bell backspace del nul crlf"),
        ("nel\x85 c1\x9f", "nel c1"),
        ("evil\u202egnp.exe \u2066iso\u2069 \u200fmark", "evilgnp.exe iso mark"),
        ("lines\nand\ttabs stay\r\n", "lines\nand\ttabs stay\n"),
        ("Ünïcödé, 中文, emoji 🙂 stay", "Ünïcödé, 中文, emoji 🙂 stay"),
        ("unterminated \x1b]0;pwned forever", "unterminated "),
    ],
)
def test_escape_sequences_and_controls_are_removed(raw: str, shown: str) -> None:
    assert terminal_safe(raw) == shown


def test_json_keeps_the_value_but_escapes_what_a_terminal_acts_on() -> None:
    value = {"k\u202e": f"x{ATTACK}\x85é"}
    text = terminal_safe_json(value)
    assert json.loads(text) == value
    assert not any((ord(char) < 0x20 and char != "\n") or 0x7F <= ord(char) <= 0x9F for char in text)
    assert "\u202e" not in text and "é" in text


def printed(*renderables: object) -> str:
    out = io.StringIO()
    console = Console(file=out, force_terminal=True, color_system=None, width=200)
    for renderable in renderables:
        console.print(renderable)
    return out.getvalue()


def test_what_rich_prints_holds_no_attack_and_no_markup() -> None:
    session = {
        "id": "s1",
        "status": "stopped",
        "model": "m",
        "title": f"[link=https://evil.example]{ATTACK}click[/link]",
        "lastStepSummary": f"done{ATTACK}",
        "createdAt": None,
    }
    feed = {"type": "result", "summary": f"read{ATTACK} page", "data": json.dumps({"step": 1})}
    progress = ProgressLine()
    progress.update_status({"status": "running", "activity": {"label": f"Reading{ATTACK}", "stream": ATTACK}})
    text = printed(sessions_table([session], 1, 1), session_table(session), message_line(feed), progress.text())
    assert "\x1b" not in text and "pwned" not in text and "\x07" not in text
    assert "[link=https://evil.example]" in text  # shown as text, not turned into a hyperlink
    assert output_text(f"answer{ATTACK}", as_json=False) == "answer"
