"""Profiles shared by concurrent sessions: each session's changes merge into the jar, and none reverts another's.

The same setting as ``test_profiles.py``: a real two-slot server, real Chromium, the fake provider and the login
fixture site. The sessions are held mid-run by gates so that they hold one profile at the same time.
"""

from __future__ import annotations

import pytest

from tests.e2e.agent_support import agent_steps, create, token, wait_until_status
from tests.e2e.profiles_support import (
    cookie,
    finish,
    gated_login,
    import_state,
    jar_cookies,
    jar_storage,
    new_profile,
    profile_notes,
    run_session,
    storage_state,
    whoami,
)
from tests.e2e.servers import agent_env, server_fixture
from tests.fakes.llm_script import Gate, done, navigate, structured
from tests.fakes.llm_server import FakeProvider
from tests.fakes.login_site import LoginSite
from tests.support import loopback
from tests.support.server import ServerProcess

pytestmark = [pytest.mark.e2e, pytest.mark.display, pytest.mark.timeout(420)]


server = server_fixture(lambda fake: agent_env(fake), slots=2, both_stores=True)  # on SQLite and on PostgreSQL


async def test_two_concurrent_sessions_on_one_profile_keep_both_logins(
    server: ServerProcess, fake: FakeProvider, login: LoginSite
) -> None:
    profile = new_profile(server)
    gate_a, gate_b = Gate(), Gate()
    first = run_session(server, fake, gated_login(login, "set?cookie=a&value=va&local=la&session=sa", gate_a), profile)
    second = run_session(server, fake, gated_login(login, "set?cookie=b&value=vb&local=lb&session=sb", gate_b), profile)
    assert gate_a.wait_entered(120) and gate_b.wait_entered(120), "both sessions must hold the profile at once"
    gate_a.open()
    finish(server, first["id"])
    gate_b.open()
    finish(server, second["id"])
    state = storage_state(server, profile)
    assert jar_cookies(state) == {"a": "va", "b": "vb"}
    assert jar_storage(state, "localStorage") == {"la": "va", "lb": "vb"}

    seen = whoami(server, fake, login, profile)
    assert seen["requestCookies"] == {"a": "va", "b": "vb"}
    assert seen["local"] == {"la": "va", "lb": "vb"}
    assert seen["session"] == {"sa": "va", "sb": "vb"}


async def test_a_deletion_never_wipes_another_sessions_refresh(
    server: ServerProcess, fake: FakeProvider, login: LoginSite
) -> None:
    profile = new_profile(server)
    assert import_state(server, profile, {"cookies": [cookie("x", "old"), cookie("keep", "1")]}).status_code == 200
    gate_delete, gate_refresh = Gate(), Gate()
    deleter = run_session(server, fake, gated_login(login, "forget?cookie=x", gate_delete), profile)
    refresher = run_session(server, fake, gated_login(login, "set?cookie=x&value=new", gate_refresh), profile)
    assert gate_delete.wait_entered(120) and gate_refresh.wait_entered(120)
    gate_refresh.open()
    finish(server, refresher["id"])
    assert jar_cookies(storage_state(server, profile)) == {"x": "new", "keep": "1"}
    gate_delete.open()
    finish(server, deleter["id"])
    assert jar_cookies(storage_state(server, profile)) == {"x": "new", "keep": "1"}


async def test_a_login_this_session_never_touched_is_never_reverted(
    server: ServerProcess, fake: FakeProvider, login: LoginSite
) -> None:
    profile = new_profile(server)
    # Chromium caps a cookie's expiry at 400 days and adds fields of its own: still not a change by this session
    assert import_state(server, profile, {"cookies": [cookie("x", "old", expires=4102444800)]}).status_code == 200
    gate_other, gate_refresh = Gate(), Gate()
    other = run_session(server, fake, gated_login(login, "set?cookie=u&value=mine", gate_other), profile)
    refresher = run_session(server, fake, gated_login(login, "set?cookie=x&value=new", gate_refresh), profile)
    assert gate_other.wait_entered(120) and gate_refresh.wait_entered(120)
    gate_refresh.open()
    finish(server, refresher["id"])
    gate_other.open()
    finish(server, other["id"])
    assert jar_cookies(storage_state(server, profile)) == {"x": "new", "u": "mine"}


async def test_a_keep_alive_deletion_stays_beaten_by_a_refresh_across_turns(
    server: ServerProcess, fake: FakeProvider, login: LoginSite
) -> None:
    profile = new_profile(server)
    assert import_state(server, profile, {"cookies": [cookie("x", "old")]}).status_code == 200
    marker, gate_keep, gate_refresh, tag = token("KEEPDEL"), Gate(), Gate(), token("WHO")
    fake.script(
        marker,
        [
            navigate(f"{login.url}/forget?cookie=x"),
            structured(done("Forgot."), gate=gate_keep),
            navigate(f"{login.url}/whoami?tag={tag}"),
            done("Looked again."),
        ],
        when=agent_steps,
    )
    keeper = create(server, task=f"{marker} Forget x.", keepAlive=True, profileId=profile)
    refresher = run_session(server, fake, gated_login(login, "set?cookie=x&value=new", gate_refresh), profile)
    assert gate_keep.wait_entered(120) and gate_refresh.wait_entered(120)
    gate_refresh.open()
    finish(server, refresher["id"])
    gate_keep.open()
    assert wait_until_status(server, keeper["id"], {"idle", "stopped", "error"}, timeout=180)["status"] == "idle"
    assert jar_cookies(storage_state(server, profile)) == {"x": "new"}
    follow = loopback.post(f"{server.v3}/sessions", json={"sessionId": keeper["id"], "task": "Look again."}, timeout=60)
    assert follow.status_code == 200, follow.text
    assert "x" not in login.state.wait_report(tag)["requestCookies"]  # this browser still has no x
    assert wait_until_status(server, keeper["id"], {"idle", "stopped", "error"}, timeout=180)["status"] == "idle"
    assert jar_cookies(storage_state(server, profile)) == {"x": "new"}
    loopback.post(f"{server.v3}/sessions/{keeper['id']}/stop", timeout=60)
    assert jar_cookies(storage_state(server, profile)) == {"x": "new"}


async def test_a_profile_deleted_during_a_run_is_not_written(
    server: ServerProcess, fake: FakeProvider, login: LoginSite
) -> None:
    profile = new_profile(server)
    gate = Gate()
    session = run_session(server, fake, gated_login(login, "set?cookie=late&value=v", gate), profile)
    assert gate.wait_entered(120)
    assert loopback.delete(f"{server.v3}/profiles/{profile}", timeout=30).status_code == 204
    gate.open()
    finish(server, session["id"])
    notes = profile_notes(server, session["id"])
    assert notes[-1] == f"Profile {profile} was deleted during the run; its changes were discarded.", notes
    assert not (server.home / "data" / "profiles" / f"{profile}.json").exists()
    assert loopback.get(f"{server.v3}/profiles/{profile}/storage-state", timeout=30).status_code == 404
