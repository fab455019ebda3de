"""Logging: one line per event (text, or one JSON object with ``LOG_FORMAT=json``), each tagged with the session it
belongs to, with every session's secrets hidden."""

from __future__ import annotations

import contextvars
import json
import logging
import re
import sys
from datetime import UTC, datetime
from typing import Literal

from openbrowse.domain.redaction import REDACTORS

session_id_var: contextvars.ContextVar[str] = contextvars.ContextVar("openbrowse_session_id", default="-")

_FORMAT = "%(asctime)s %(levelname)-7s [%(session_id)s] %(name)s: %(message)s"
_NOISY = (
    "httpx",
    "httpx2",
    "httpcore",
    "httpcore2",
    "browser_use",
    "bubus",
    "cdp_use",
    "websockets",
    "anthropic",
    "openai",
    "asyncio",
)


_TOKEN = re.compile(r"((?:token|takeover)=)[^&\s\"']+")


class SessionIdFilter(logging.Filter):
    """Tags each record with its session and redacts ``token=`` and ``takeover=`` values (live-view, takeover and
    CDP URLs are logged)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if _is_unlocked_domains_warning(record):
            return False
        record.session_id = session_id_var.get()
        if record.args:
            record.args = tuple(_TOKEN.sub(r"\1***", a) if isinstance(a, str) else a for a in record.args)
        if isinstance(record.msg, str) and ("token=" in record.msg or "takeover=" in record.msg):
            record.msg = _TOKEN.sub(r"\1***", record.msg)
        _redact_secrets(record)
        return True


def _is_unlocked_domains_warning(record: logging.LogRecord) -> bool:
    """browser-use warns on every agent with ``sensitive_data`` unless navigation is locked to a domain list; here
    the secrets reach only typing on matching origins (``agent/secret_typing.py``), so the warning is wrong."""
    return record.name.startswith("browser_use.Agent") and "is not locked down" in str(record.msg)


def _redact_secrets(record: logging.LogRecord) -> None:
    """Spec §25.3: no session's ``sensitiveData`` value reaches the log, in the message or a traceback."""
    redactor = REDACTORS.everyone
    if not redactor:
        return
    record.msg, record.args = redactor.text(record.getMessage()), None
    if record.exc_info and not record.exc_text:
        record.exc_text = logging.Formatter().formatException(record.exc_info)
    if record.exc_text:
        record.exc_text = redactor.text(record.exc_text)
    if record.stack_info:
        record.stack_info = redactor.text(record.stack_info)


class JsonFormatter(logging.Formatter):
    """``LOG_FORMAT=json`` (spec §19.3): one JSON object per line per event, with ``sessionId`` when there is one.

    Keys: ``time`` (ISO 8601 UTC, milliseconds), ``level``, ``logger``, ``message``, ``sessionId``, ``exception``.
    A traceback stays inside its object (newlines escaped), so every line parses on its own."""

    def format(self, record: logging.LogRecord) -> str:
        moment = datetime.fromtimestamp(record.created, UTC)
        entry: dict[str, object] = {
            "time": moment.isoformat(timespec="milliseconds").replace("+00:00", "Z"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        session_id = getattr(record, "session_id", "-")
        if session_id != "-":
            entry["sessionId"] = session_id
        if record.exc_info and not record.exc_text:
            record.exc_text = self.formatException(record.exc_info)
        if record.exc_text:
            entry["exception"] = record.exc_text
        if record.stack_info:
            entry["stack"] = self.formatStack(record.stack_info)
        return json.dumps(entry, ensure_ascii=False, default=str)


def configure_logging(level: str = "INFO", log_format: Literal["text", "json"] = "text") -> None:
    """Configure the root logger once; quieten chatty libraries unless we are debugging."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter() if log_format == "json" else logging.Formatter(_FORMAT))
    handler.addFilter(SessionIdFilter())
    root = logging.getLogger()
    for existing in list(root.handlers):
        root.removeHandler(existing)
    root.addHandler(handler)
    root.setLevel(level)
    quiet = logging.DEBUG if level == "DEBUG" else logging.WARNING
    for name in _NOISY:
        logging.getLogger(name).setLevel(quiet)
