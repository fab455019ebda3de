"""Logging: one line per event, each tagged with the session it belongs to."""

from __future__ import annotations

import contextvars
import logging
import re
import sys

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


_TOKEN = re.compile(r"(token=)[^&\s\"']+")


class SessionIdFilter(logging.Filter):
    """Tags each record with its session and redacts ``token=`` values (live-view and CDP URLs are logged)."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.session_id = session_id_var.get()
        if record.args:
            record.args = tuple(_TOKEN.sub(r"\1***", a) if isinstance(a, str) else a for a in record.args)
        if isinstance(record.msg, str) and "token=" in record.msg:
            record.msg = _TOKEN.sub(r"\1***", record.msg)
        return True


def configure_logging(level: str = "INFO") -> None:
    """Configure the root logger once; quieten chatty libraries unless we are debugging."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter(_FORMAT))
    handler.addFilter(SessionIdFilter())
    root = logging.getLogger()
    for existing in list(root.handlers):
        root.removeHandler(existing)
    root.addHandler(handler)
    root.setLevel(level)
    quiet = logging.DEBUG if level == "DEBUG" else logging.WARNING
    for name in _NOISY:
        logging.getLogger(name).setLevel(quiet)
