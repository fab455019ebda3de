"""``sensitiveData`` on the wire and at rest (spec §25.3, §25.4), through a real server without a browser.

* The domain-scoped form is accepted; a bad pattern, or a flat secret whose task names no start URL, is a 422 with
  one sentence, before anything is stored.
* The data directory, the database and its -wal/-shm files are created private (0700/0600).
* A session's secrets leave its row when it ends, and its bytes leave the database file and the WAL.
* ``.env`` and data files other users can read get a warning in the startup log and in ``/health/details``.
"""

from __future__ import annotations

import secrets
import sqlite3
import stat
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import StartServer
from tests.e2e.servers import server_fixture
from tests.support import loopback
from tests.support.server import ServerProcess

pytestmark = pytest.mark.e2e

# one server for the refusals and the startup check: none of them stores anything (each refusal checks it)
server = server_fixture(check_temp=True)


def _post(server: ServerProcess, **body: Any) -> httpx.Response:
    return loopback.post(f"{server.v3}/sessions", json=body, timeout=30)


def _stored_secrets(server: ServerProcess, session_id: str) -> Any:
    with sqlite3.connect(f"file:{server.home / 'data' / 'browser_use.db'}?mode=ro", uri=True) as conn:
        row = conn.execute("SELECT sensitive_data FROM sessions WHERE id = ?", (session_id,)).fetchone()
    return row[0]


def _database_bytes(server: ServerProcess) -> bytes:
    data = server.home / "data"
    return b"".join(path.read_bytes() for path in sorted(data.glob("browser_use.db*")))


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.mark.parametrize(
    ("sensitive", "task", "detail"),
    [
        ({"ftp://bank.test": {"pw": "x"}}, None, "sensitiveData pattern 'ftp://bank.test' is not valid"),
        ({"https://*": {"pw": "x"}}, None, "sensitiveData pattern 'https://*' is not valid"),
        ({"https://bank.test/login": {"pw": "x"}}, None, "is not valid"),
        ({"https://bank.test": {"pw": ""}}, None, "must be a non-empty string"),
        ({"pw": "x"}, "Log in to my bank.", "Flat sensitiveData needs a task that starts from a URL"),
        ({"pw": "x"}, None, "Flat sensitiveData needs a task that starts from a URL"),
    ],
)
def test_bad_sensitive_data_is_a_422_with_one_sentence(
    server: ServerProcess, sensitive: dict[str, Any], task: str | None, detail: str
) -> None:
    response = _post(server, task=task, sensitiveData=sensitive)
    assert response.status_code == 422, response.text
    message = response.json()["detail"]
    assert isinstance(message, str) and detail in message and message.count(". ") == 0
    listed = loopback.get(f"{server.v3}/sessions", timeout=30).json()
    assert listed["total"] == 0


def test_files_are_private_and_secrets_leave_the_row_and_the_file_when_the_session_ends(
    start_server: StartServer,
) -> None:
    server = start_server()
    data = server.home / "data"
    assert _mode(data) == 0o700
    for name in ("browser_use.db", "browser_use.db-wal", "browser_use.db-shm"):
        assert _mode(data / name) == 0o600, name
    value = f"pw-{secrets.token_hex(12)}"
    scoped = _post(server, sensitiveData={"https://*.bank.test": {"pw": value}})
    assert scoped.status_code == 200, scoped.text
    assert "sensitiveData" not in scoped.json() and value not in scoped.text
    sid = scoped.json()["id"]
    assert '"https://*.bank.test": {"pw": "' + value in _stored_secrets(server, sid)
    assert value.encode() in _database_bytes(server)

    stopped = loopback.post(f"{server.v3}/sessions/{sid}/stop", json={"strategy": "session"}, timeout=30)
    assert stopped.status_code == 200 and stopped.json()["status"] == "stopped"
    assert _stored_secrets(server, sid) is None
    assert value.encode() not in _database_bytes(server)


def test_a_keep_alive_session_keeps_its_secrets_while_it_takes_follow_ups(start_server: StartServer) -> None:
    server = start_server()
    value = f"user-{secrets.token_hex(12)}"
    created = _post(server, keepAlive=True, sensitiveData={"https://a.test": {"user": value}})
    assert created.status_code == 200
    sid = created.json()["id"]
    assert _stored_secrets(server, sid) == '{"https://a.test": {"user": "' + value + '"}}'
    loopback.post(f"{server.v3}/sessions/{sid}/stop", json={"strategy": "session"}, timeout=30).raise_for_status()
    assert _stored_secrets(server, sid) == '{"https://a.test": {"user": "' + value + '"}}'
    assert loopback.delete(f"{server.v3}/sessions/{sid}", timeout=30).status_code in {200, 204}
    assert value.encode() not in _database_bytes(server)


def test_readable_env_and_data_files_are_warned_about_at_startup(start_server: StartServer, tmp_path: Path) -> None:
    home = tmp_path / "loose"
    (home / "data").mkdir(parents=True)
    (home / "data").chmod(0o755)
    (home / ".env").write_text("LOG_LEVEL=INFO\n")
    (home / ".env").chmod(0o644)
    (home / "data" / "browser_use.db").touch()
    (home / "data" / "browser_use.db").chmod(0o644)
    server = start_server(home=home)
    details = loopback.get(f"{server.base_url}/health/details", timeout=30).json()
    warnings = details["fileWarnings"]
    assert any(".env" in w and "0644" in w and "chmod 600" in w for w in warnings), warnings
    assert any(w.startswith(str(home / "data") + " (the data directory) has mode 0755") for w in warnings), warnings
    assert any("(the database) has mode 0644" in w for w in warnings), warnings
    log = server.log()
    assert log.count("Insecure file mode:") == len(warnings) >= 3


def test_private_files_get_no_warning(server: ServerProcess) -> None:
    assert loopback.get(f"{server.base_url}/health/details", timeout=30).json()["fileWarnings"] == []
    assert "Insecure file mode" not in server.log()
