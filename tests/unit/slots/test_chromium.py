from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from openbrowse.config import Settings
from openbrowse.errors import BrowserUnavailable
from openbrowse.slots import chromium
from openbrowse.slots.chromium import (
    LIGHT_FLAGS,
    BrowserBinary,
    chromium_argv,
    find_browser_binary,
    find_cloakbrowser_binary,
)


def _executable(path: Path) -> Path:
    path.write_text("#!/bin/sh\nexit 0\n")
    path.chmod(0o755)
    return path


def test_configured_binary_wins(tmp_path: Path) -> None:
    chrome = _executable(tmp_path / "my-chrome")
    binary = find_browser_binary(Settings(OPENBROWSE_DATA_DIR=tmp_path, CHROME_BINARY=str(chrome)))
    assert binary == BrowserBinary(chrome, "CHROME_BINARY")


@pytest.mark.parametrize("kind", ["missing", "not-executable", "directory"])
def test_unusable_configured_binary_names_the_setting(tmp_path: Path, kind: str) -> None:
    target = tmp_path / "chrome"
    if kind == "not-executable":
        target.write_text("")
    elif kind == "directory":
        target.mkdir()
    with pytest.raises(BrowserUnavailable, match="CHROME_BINARY="):
        find_browser_binary(Settings(OPENBROWSE_DATA_DIR=tmp_path, CHROME_BINARY=str(target)))


def test_system_browser_on_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(chromium, "SYSTEM_BINARIES", ())
    monkeypatch.setenv("PATH", str(tmp_path))
    chrome = _executable(tmp_path / "google-chrome")
    binary = find_browser_binary(Settings(OPENBROWSE_DATA_DIR=tmp_path))
    assert binary == BrowserBinary(chrome, "system")


def test_no_browser_at_all_names_the_setting(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(chromium, "SYSTEM_BINARIES", ())
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(BrowserUnavailable, match="set CHROME_BINARY"):
        find_browser_binary(Settings(OPENBROWSE_DATA_DIR=tmp_path))


@pytest.mark.skipif(importlib.util.find_spec("cloakbrowser") is not None, reason="cloakbrowser is installed")
def test_cloakbrowser_is_ignored_when_the_package_is_missing(tmp_path: Path) -> None:
    _executable(tmp_path / "chrome")
    env = {"CLOAKBROWSER_BINARY_PATH": str(tmp_path / "chrome"), "CLOAKBROWSER_CACHE_DIR": str(tmp_path)}
    assert find_cloakbrowser_binary(env) is None


def _argv(**kwargs: object) -> list[str]:
    binary = kwargs.pop("binary", BrowserBinary(Path("/usr/bin/chromium"), "system"))
    return chromium_argv(binary, cdp_port=9300, user_data_dir=Path("/data/run/slots/slot-0/user-data"), **kwargs)  # type: ignore[arg-type]


def test_argv_has_the_required_flags_and_exactly_one_tab() -> None:
    argv = _argv(as_root=False)
    assert argv[0] == "/usr/bin/chromium"
    for flag in (
        "--remote-debugging-port=9300",
        "--remote-debugging-address=127.0.0.1",
        "--user-data-dir=/data/run/slots/slot-0/user-data",
        "--no-first-run",
        "--no-default-browser-check",
        "--disable-dev-shm-usage",
        "--window-position=0,0",
        "--window-size=1920,1080",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
    ):
        assert flag in argv
    urls = [arg for arg in argv[1:] if not arg.startswith("--")]
    assert urls == ["about:blank"]
    assert argv[-1] == "about:blank"
    assert "--no-sandbox" not in argv
    assert not any(arg.startswith("--remote-allow-origins") for arg in argv)


def test_root_gets_no_sandbox_and_test_type() -> None:
    argv = _argv(as_root=True)
    assert "--no-sandbox" in argv
    assert "--test-type" in argv


def test_light_flags_only_when_asked() -> None:
    assert not set(LIGHT_FLAGS) & set(_argv(as_root=False))
    assert set(LIGHT_FLAGS) <= set(_argv(as_root=False, light=True))


def test_stealth_flags_for_cloakbrowser_only() -> None:
    cloak = BrowserBinary(Path("/root/.cloakbrowser/chromium-146/chrome"), "cloakbrowser", stealth=True)
    argv = _argv(binary=cloak, as_root=False)
    assert "--fingerprint-platform=windows" in argv
    assert any(arg.startswith("--fingerprint=") for arg in argv)
    assert not any(arg.startswith("--fingerprint") for arg in _argv(as_root=False))


def test_window_size_is_configurable() -> None:
    assert "--window-size=1280,720" in _argv(as_root=False, window_size=(1280, 720))
