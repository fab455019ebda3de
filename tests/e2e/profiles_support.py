"""Shared parts of the profile end-to-end tests: sessions on a profile scripted against the login fixture site, and
reading back what the profile's jar holds."""

from __future__ import annotations

import contextlib
import json
import sqlite3
from typing import Any

import httpx

from tests.e2e.agent_support import agent_steps, create, data_of, messages, token, wait_until_status
from tests.fakes.llm_script import Gate, done, navigate, structured
from tests.fakes.llm_server import FakeProvider
from tests.fakes.login_site import LoginSite
from tests.support import loopback
from tests.support.server import ServerProcess


def new_profile(server: ServerProcess, name: str = "p") -> str:
    response = loopback.post(f"{server.v3}/profiles", json={"name": name}, timeout=30)
    assert response.status_code == 201, response.text
    return str(response.json()["id"])


def storage_state(server: ServerProcess, profile_id: str) -> dict[str, Any]:
    response = loopback.get(f"{server.v3}/profiles/{profile_id}/storage-state", timeout=30)
    assert response.status_code == 200, response.text
    data: dict[str, Any] = response.json()
    return data


def jar_cookies(state: dict[str, Any]) -> dict[str, str]:
    return {c["name"]: c["value"] for c in state["cookies"]}


def jar_storage(state: dict[str, Any], kind: str) -> dict[str, str]:
    return {e["name"]: e["value"] for o in state["origins"] for e in o.get(kind, [])}


def run_session(
    server: ServerProcess, fake: FakeProvider, steps: list[Any], profile_id: str | None, **body: Any
) -> dict[str, Any]:
    marker = token("PROF")
    fake.script(marker, steps, when=agent_steps)
    extra = {"profileId": profile_id} if profile_id else {}
    session = create(server, task=f"{marker} Use the login site.", **extra, **body)
    return session


def finish(server: ServerProcess, session_id: str) -> dict[str, Any]:
    """Wait for the terminal status only, as a user does: by then the profile is merged (spec §9.3).

    Polled closely, so whatever the test does next happens within milliseconds of the status turning.
    """
    finished = wait_until_status(server, session_id, {"stopped", "error", "idle"}, timeout=180, interval=0.01)
    assert finished["status"] == "stopped", finished["lastStepSummary"]
    return finished


def profile_notes(server: ServerProcess, session_id: str) -> list[str]:
    return [
        m["summary"]
        for m in messages(server, session_id)
        if m["type"] == "event" and data_of(m).get("action") == "profile"
    ]


def whoami(server: ServerProcess, fake: FakeProvider, login: LoginSite, profile_id: str | None) -> dict[str, Any]:
    tag = token("WHO")
    session = run_session(server, fake, [navigate(f"{login.url}/whoami?tag={tag}"), done("Looked.")], profile_id)
    finish(server, session["id"])
    return login.state.wait_report(tag)


def gated_login(login: LoginSite, query: str, gate: Gate) -> list[Any]:
    return [navigate(f"{login.url}/{query}"), structured(done("Done."), gate=gate)]


def import_state(server: ServerProcess, profile_id: str, state: dict[str, Any]) -> httpx.Response:
    return loopback.put(f"{server.v3}/profiles/{profile_id}/storage-state", json=state, timeout=30)


def cookie(name: str, value: str, **extra: Any) -> dict[str, Any]:
    return {"name": name, "value": value, "domain": "127.0.0.1", "path": "/", "expires": 4102444800, **extra}


def stored_jar(server: ServerProcess, profile: str, column: str = "jar") -> Any:
    """A profile's jar (or its import backup, ``column="jar_backup"``) as the server's SQLite store holds it; None
    when the profile has no row or no such jar (spec §26.1: jars live in the database)."""
    database = server.home / "data" / "browser_use.db"
    with contextlib.closing(sqlite3.connect(f"file:{database}?mode=ro", uri=True)) as conn:
        row = conn.execute(f"SELECT {column} FROM profiles WHERE id = ?", (profile,)).fetchone()
    return json.loads(row[0]) if row is not None and row[0] is not None else None
