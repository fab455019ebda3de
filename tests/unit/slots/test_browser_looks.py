"""The language, time zone and flags every slot's Chromium is given (spec §28.2); the browser's side of it is
measured end to end by ``tests/e2e/test_browser_looks.py``."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from pydantic import ValidationError

from openbrowse.config import Settings
from openbrowse.errors import ConfigError
from openbrowse.slots import browser_looks as looks_module
from openbrowse.slots.browser_looks import BrowserLooks, browser_looks, host_time_zone


@pytest.fixture(autouse=True)
def fresh_host_zone() -> None:
    host_time_zone.cache_clear()


def test_a_regional_locale_is_followed_by_its_language() -> None:
    assert BrowserLooks("de-DE", "Europe/Berlin").accept_languages == "de-DE,de"
    assert BrowserLooks("fr", "Europe/Paris").accept_languages == "fr"


def test_the_flags_hide_automation_and_give_software_webgl_unless_light() -> None:
    looks = BrowserLooks("en-US", "UTC")
    flags = looks.flags()
    assert "--disable-blink-features=AutomationControlled" in flags
    assert {"--use-angle=swiftshader", "--enable-unsafe-swiftshader", "--disable-gpu-compositing"} <= set(flags)
    assert {"--lang=en-US", "--accept-lang=en-US,en"} <= set(flags)
    assert not any("swiftshader" in flag for flag in looks.flags(software_gl=False))
    assert looks.environment() == {"TZ": "UTC"}


def test_settings_choose_the_locale_and_zone(tmp_path: Path) -> None:
    settings = Settings(OPENBROWSE_DATA_DIR=tmp_path, BROWSER_LOCALE="pt-BR", BROWSER_TIMEZONE="America/Sao_Paulo")
    assert browser_looks(settings) == BrowserLooks("pt-BR", "America/Sao_Paulo")


def test_an_unknown_zone_is_a_config_error_and_a_malformed_locale_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="BROWSER_TIMEZONE=Mars/Olympus is not a known IANA time zone"):
        browser_looks(Settings(OPENBROWSE_DATA_DIR=tmp_path, BROWSER_TIMEZONE="Mars/Olympus"))
    with pytest.raises(ValidationError):
        Settings(OPENBROWSE_DATA_DIR=tmp_path, BROWSER_LOCALE="de_DE; rm -rf")


def test_the_host_zone_comes_from_tz_then_the_system_else_utc(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TZ", ":Asia/Tokyo")
    assert host_time_zone() == "Asia/Tokyo"
    host_time_zone.cache_clear()
    monkeypatch.setenv("TZ", "CET-1CEST")  # a POSIX rule is no zone name a page could be told
    monkeypatch.setattr(looks_module, "Path", lambda _: Path("/nonexistent/timezone"))
    monkeypatch.setattr(os, "readlink", lambda _: "/usr/share/zoneinfo/America/New_York")
    assert host_time_zone() == "America/New_York"
    host_time_zone.cache_clear()
    monkeypatch.setattr(os, "readlink", lambda _: "/somewhere/else")
    assert host_time_zone() == "UTC"
