"""Profiles end to end: logins persisted across sessions, shared by concurrent sessions, imported, deleted.

A real server with two display slots, real Chromium, the fake provider scripting the agent's navigations, and a
login fixture site that stores a cookie, a localStorage and a sessionStorage value and reports what it sees.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from browser_use_sdk.v3 import AsyncBrowserUse

from tests.e2e.agent_support import create, data_of, messages, token, wait_until_status
from tests.fakes.llm_request import LLMRequest
from tests.fakes.llm_script import Gate, done, navigate, structured
from tests.fakes.llm_server import FakeProvider
from tests.fakes.login_site import LoginSite
from tests.support.server import ServerProcess

pytestmark = [pytest.mark.e2e, pytest.mark.display]


def agent_steps(request: LLMRequest) -> bool:
    return request.is_agent_step


@pytest.fixture(scope="module")
def login() -> Iterator[LoginSite]:
    with LoginSite() as site:
        yield site


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, fake: FakeProvider) -> Iterator[ServerProcess]:
    env = {**fake.env(), "OPENAI_API_STYLE": "responses", "MAX_CONCURRENT_SESSIONS": "2"}
    process = ServerProcess(home=tmp_path_factory.mktemp("profiles-home"), env=env).start()
    yield process
    process.stop()
    assert not process.leftovers(), process.leftovers()


def new_profile(server: ServerProcess, name: str = "p") -> str:
    response = httpx.post(f"{server.v3}/profiles", json={"name": name}, timeout=30)
    assert response.status_code == 201, response.text
    return str(response.json()["id"])


def storage_state(server: ServerProcess, profile_id: str) -> dict[str, Any]:
    response = httpx.get(f"{server.v3}/profiles/{profile_id}/storage-state", timeout=30)
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
    finished = wait_until_status(server, session_id, {"stopped", "error", "idle"}, timeout=180)
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


async def test_a_login_persists_into_later_sessions_of_the_profile_only(
    server: ServerProcess, fake: FakeProvider, login: LoginSite
) -> None:
    profile = new_profile(server)
    logged_in = run_session(
        server,
        fake,
        [navigate(f"{login.url}/set?cookie=sid&value=alice-1&local=token&session=tab"), done("Logged in.")],
        profile,
    )
    finish(server, logged_in["id"])
    notes = profile_notes(server, logged_in["id"])
    assert any(n.startswith(f"Profile {profile} saved") for n in notes), notes
    assert all("alice-1" not in n for n in notes)
    state = storage_state(server, profile)
    assert jar_cookies(state) == {"sid": "alice-1"}
    assert jar_storage(state, "localStorage") == {"token": "alice-1"}
    assert jar_storage(state, "sessionStorage") == {"tab": "alice-1"}
    assert httpx.get(f"{server.v3}/profiles/{profile}", timeout=30).json()["cookieDomains"] == ["127.0.0.1"]

    seen = whoami(server, fake, login, profile)
    assert seen["requestCookies"] == {"sid": "alice-1"}
    assert seen["local"] == {"token": "alice-1"}
    assert seen["session"] == {"tab": "alice-1"}

    anonymous = whoami(server, fake, login, None)
    assert anonymous["requestCookies"] == {} and anonymous["local"] == {} and anonymous["session"] == {}
    assert httpx.get(f"{server.v3}/profiles/{profile}", timeout=30).json()["lastUsedAt"] is not None
