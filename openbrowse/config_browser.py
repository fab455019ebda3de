"""The settings of the browsers themselves: which Chromium, its flags, and how it looks to sites (spec §28.2), a
base of :class:`Settings`."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field
from pydantic_settings import BaseSettings


class BrowserSettings(BaseSettings):
    CHROME_BINARY: str | None = None
    CHROME_LIGHT_FLAGS: bool = False
    NOVNC_WEB_DIR: Path = Path("/usr/share/novnc")
    BROWSER_LOCALE: str = Field(default="en-US", pattern=r"^[a-z]{2,3}(-[A-Za-z0-9]{2,8})*$")
    """The browsers' language: ``navigator.language(s)`` and ``Accept-Language`` (spec §28.2)."""
    BROWSER_TIMEZONE: str | None = None
    """The browsers' IANA time zone; unset: the host's (``TZ``, ``/etc/timezone``), else UTC (spec §28.2)."""
