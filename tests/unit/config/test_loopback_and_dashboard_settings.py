"""Which binds count as loopback, and the dashboard's and docs' settings (spec §25.2, §2.1)."""

from __future__ import annotations

from pathlib import Path

import pytest

from openbrowse.config import Settings, is_loopback
from openbrowse.errors import ConfigError


@pytest.mark.parametrize("host", ["127.0.0.1", "127.0.0.2", "127.255.255.254", "::1", "localhost", "LocalHost"])
def test_loopback_names_and_addresses(host: str) -> None:
    assert is_loopback(host)


@pytest.mark.parametrize(
    "host", ["127.example.com", "127.0.0.1.nip.io", "127.", "127.0.0.1x", "localhost.example", "0.0.0.0", "::", ""]
)
def test_names_that_only_look_like_loopback_are_not(host: str) -> None:
    assert not is_loopback(host)


def load(monkeypatch: pytest.MonkeyPatch, home: Path, **env: str) -> Settings:
    monkeypatch.setenv("OPENBROWSE_HOME", str(home))
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    return Settings.load()


def test_a_name_starting_with_127_needs_an_api_key(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="API_KEY"):
        load(monkeypatch, tmp_path, HOST="127.example.com")


def test_the_dashboard_password_is_never_the_api_key(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    settings = load(monkeypatch, tmp_path, API_KEY="k3y")
    assert settings.dashboard_password is None  # loopback: the login is off, the key header still works
    with pytest.raises(ConfigError, match="DASHBOARD_PASSWORD must differ from API_KEY"):
        load(monkeypatch, tmp_path, DASHBOARD_PASSWORD="k3y")
    monkeypatch.setenv("DASHBOARD_PASSWORD", "own-secret")
    assert Settings.load().dashboard_password == "own-secret"


def test_a_public_bind_with_a_key_needs_a_dashboard_password(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="DASHBOARD_PASSWORD must be set"):
        load(monkeypatch, tmp_path, HOST="0.0.0.0", API_KEY="k3y")
    monkeypatch.setenv("DASHBOARD_PASSWORD", "own-secret")
    assert Settings.load().auth_enabled
    monkeypatch.delenv("DASHBOARD_PASSWORD")
    monkeypatch.setenv("ALLOW_INSECURE_NO_AUTH", "1")
    assert not Settings.load().auth_enabled  # no auth at all: nothing to protect with a password


def test_docs_are_on_by_default_only_on_loopback(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    assert load(monkeypatch, tmp_path).docs_enabled
    public = load(monkeypatch, tmp_path, HOST="0.0.0.0", API_KEY="k3y", DASHBOARD_PASSWORD="pw")
    assert not public.docs_enabled
    monkeypatch.setenv("DOCS_ENABLED", "1")
    assert Settings.load().docs_enabled
    monkeypatch.setenv("HOST", "127.0.0.1")
    monkeypatch.setenv("DOCS_ENABLED", "0")
    assert not Settings.load().docs_enabled


@pytest.mark.parametrize(
    ("setting", "value"),
    [
        ("ALLOWED_HOSTS", "api.example"),
        ("ALLOWED_HOSTS", "*"),
        ("CORS_ORIGINS", "https://a.example"),
        ("FORWARDED_ALLOW_IPS", "10.0.0.1"),
    ],
)
def test_proxy_settings_need_a_key_or_the_explicit_escape_hatch(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, setting: str, value: str
) -> None:
    with pytest.raises(ConfigError, match="so API_KEY must be set"):
        load(monkeypatch, tmp_path, **{setting: value})
    assert load(monkeypatch, tmp_path, **{setting: value}, API_KEY="k" * 32).auth_enabled
    monkeypatch.delenv("API_KEY")
    assert not load(monkeypatch, tmp_path, **{setting: value}, ALLOW_INSECURE_NO_AUTH="1").auth_enabled
