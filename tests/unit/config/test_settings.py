"""Settings: .env.example documents every setting, and invalid values stop the server with a clear message."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from pydantic import ValidationError

from openbrowse.config import LAST_SLOT_INDEX, Settings
from openbrowse.errors import ConfigError

REPO = Path(__file__).resolve().parents[3]


def example_keys() -> set[str]:
    keys = set()
    for line in (REPO / ".env.example").read_text().splitlines():
        match = re.match(r"^#?\s*([A-Z][A-Z0-9_]+)=", line)
        if match:
            keys.add(match.group(1))
    return keys


def test_env_example_lists_every_setting() -> None:
    assert example_keys() == set(Settings.model_fields)


def test_env_example_values_are_valid(tmp_path: Path) -> None:
    values = {}
    for line in (REPO / ".env.example").read_text().splitlines():
        if line and not line.startswith("#"):
            key, _, value = line.partition("=")
            values[key] = value
    settings = Settings(OPENBROWSE_HOME=tmp_path, **values)  # type: ignore[arg-type]
    assert settings.PORT == 8420 and settings.MAX_CONCURRENT_SESSIONS == 1


@pytest.mark.parametrize(
    ("variable", "value", "message"),
    [
        ("MAX_CONCURRENT_SESSIONS", "0", "MAX_CONCURRENT_SESSIONS"),
        ("KEEP_ALIVE_IDLE_TIMEOUT", "-1", "KEEP_ALIVE_IDLE_TIMEOUT"),
        ("PREWARM_SLOTS", "-1", "PREWARM_SLOTS: Input should be greater than or equal to 0"),
        ("PREWARM_SLOTS", "two", "PREWARM_SLOTS: Input should be a valid integer"),
        ("CLOUD_MAX_COST_FACTOR", "1.5", "CLOUD_MAX_COST_FACTOR"),
        ("CLOUD_MAX_COST_FACTOR", "0", "CLOUD_MAX_COST_FACTOR"),
        ("OPENAI_API_STYLE", "grpc", "OPENAI_API_STYLE"),
        ("PORT", "70000", "PORT"),
    ],
)
def test_invalid_values_name_the_setting(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, variable: str, value: str, message: str
) -> None:
    monkeypatch.setenv("OPENBROWSE_HOME", str(tmp_path))
    monkeypatch.setenv(variable, value)
    with pytest.raises(ConfigError, match=message):
        Settings.load()


def test_dotenv_in_home_is_read_and_environment_wins(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    (tmp_path / ".env").write_text("MAX_CONCURRENT_SESSIONS=3\nTASK_TIMEOUT=10\n")
    monkeypatch.setenv("OPENBROWSE_HOME", str(tmp_path))
    monkeypatch.setenv("TASK_TIMEOUT", "20")
    settings = Settings.load()
    assert settings.MAX_CONCURRENT_SESSIONS == 3 and settings.TASK_TIMEOUT == 20
    assert settings.db_path == tmp_path / "data" / "browser_use.db"


def test_settings_that_were_removed_are_ignored(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """An old .env or environment that still sets ENGINE_THREADS/ENGINE_NICE (removed in issue 24) still starts."""
    (tmp_path / ".env").write_text("ENGINE_THREADS=true\nENGINE_NICE=10\nTASK_TIMEOUT=10\n")
    monkeypatch.setenv("OPENBROWSE_HOME", str(tmp_path))
    monkeypatch.setenv("ENGINE_THREADS", "false")
    settings = Settings.load()
    assert settings.TASK_TIMEOUT == 10
    assert not hasattr(settings, "ENGINE_THREADS")


def test_public_bind_needs_an_api_key(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("OPENBROWSE_HOME", str(tmp_path))
    monkeypatch.setenv("HOST", "0.0.0.0")
    with pytest.raises(ConfigError, match="API_KEY"):
        Settings.load()
    monkeypatch.setenv("API_KEY", "k")
    monkeypatch.setenv("DASHBOARD_PASSWORD", "pw")
    assert Settings.load().auth_enabled


def test_script_host_uids_never_meet_a_slots_uid_and_fit_a_uid_at_the_highest_base() -> None:
    low = Settings(SANDBOX_UID_BASE=1000)
    slot_uids = {low.SANDBOX_UID_BASE + index for index in range(LAST_SLOT_INDEX + 1)}
    script_uids = {low.script_uid(index) for index in range(LAST_SLOT_INDEX + 1)}
    assert not slot_uids & script_uids and len(script_uids) == LAST_SLOT_INDEX + 1
    highest = Settings.model_fields["SANDBOX_UID_BASE"].metadata
    top = next(m.le for m in highest if getattr(m, "le", None) is not None)
    assert Settings(SANDBOX_UID_BASE=top).script_uid(LAST_SLOT_INDEX) <= 2**31 - 2
    with pytest.raises(ValidationError):
        Settings(SANDBOX_UID_BASE=top + 1)
