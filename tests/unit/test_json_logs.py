"""``LOG_FORMAT=json``: each event one line holding one JSON object, tagged with its session, tracebacks inside."""

from __future__ import annotations

import json
import logging

from openbrowse.logs import JsonFormatter, SessionIdFilter, session_id_var


def render(record: logging.LogRecord) -> dict[str, object]:
    SessionIdFilter().filter(record)
    line = JsonFormatter().format(record)
    assert "\n" not in line
    value = json.loads(line)
    assert isinstance(value, dict)
    return value


def make(message: str, *args: object, exc: bool = False) -> logging.LogRecord:
    exc_info = None
    if exc:
        try:
            raise ValueError("boom\nsecond line")
        except ValueError as error:
            exc_info = (type(error), error, error.__traceback__)
    return logging.LogRecord("openbrowse.test", logging.ERROR, __file__, 1, message, args, exc_info)


def test_session_tagged_and_token_redacted() -> None:
    reset = session_id_var.set("s-42")
    try:
        entry = render(make("live at %s", "/vnc/x/view?token=abc123"))
    finally:
        session_id_var.reset(reset)
    assert entry["sessionId"] == "s-42" and entry["level"] == "ERROR" and entry["logger"] == "openbrowse.test"
    assert entry["message"] == "live at /vnc/x/view?token=***"
    assert str(entry["time"]).endswith("Z")


def test_no_session_no_tag_and_traceback_kept_on_one_line() -> None:
    entry = render(make("failed", exc=True))
    assert "sessionId" not in entry
    assert "ValueError: boom" in str(entry["exception"]) and "second line" in str(entry["exception"])
