"""Profiles end to end: logins a session saves into its profile and later sessions load, imports, the profile API.

A real server with two display slots, real Chromium, the fake provider scripting the agent's navigations, and a
login fixture site (``login``) that stores a cookie, a localStorage and a sessionStorage value and reports what it
sees. Several sessions sharing one profile are ``test_profile_merges.py``.
"""

from __future__ import annotations

import signal
from collections.abc import Callable

import httpx
import pytest
from browser_use_sdk.v3 import AsyncBrowserUse

from tests.e2e.agent_support import agent_steps, create, messages, stop, token, wait_until_status
from tests.e2e.browser_support import cdp_navigate
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
    stored_jar,
    whoami,
)
from tests.e2e.servers import agent_env, server_fixture
from tests.fakes.llm_script import Gate, done, navigate
from tests.fakes.llm_server import FakeProvider
from tests.fakes.login_site import LoginSite
from tests.support import loopback
from tests.support.server import ServerProcess

pytestmark = [pytest.mark.e2e, pytest.mark.display, pytest.mark.timeout(420)]


server = server_fixture(lambda fake: agent_env(fake), slots=2)


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
    assert loopback.get(f"{server.v3}/profiles/{profile}", timeout=30).json()["cookieDomains"] == ["127.0.0.1"]

    seen = whoami(server, fake, login, profile)
    assert seen["requestCookies"] == {"sid": "alice-1"}
    assert seen["local"] == {"token": "alice-1"}
    assert seen["session"] == {"tab": "alice-1"}

    anonymous = whoami(server, fake, login, None)
    assert anonymous["requestCookies"] == {} and anonymous["local"] == {} and anonymous["session"] == {}
    assert loopback.get(f"{server.v3}/profiles/{profile}", timeout=30).json()["lastUsedAt"] is not None
    assert "alice-1" not in server.log()


async def test_a_session_that_reports_stopped_has_saved_its_profile(
    server: ServerProcess, fake: FakeProvider, login: LoginSite
) -> None:
    profile = new_profile(server)
    elsewhere = login.url.replace("127.0.0.1", "localhost")  # the origin left behind is read back at the close
    steps = [
        navigate(f"{login.url}/set?cookie=sid&value=ended&local=lk"),
        navigate(f"{elsewhere}/whoami?tag={token('AWAY')}"),
        done("Logged in."),
    ]
    first = run_session(server, fake, steps, profile)
    finish(server, first["id"])
    notes = profile_notes(server, first["id"])  # at once: nothing of the run may still be on its way to the jar
    assert notes and notes[-1].startswith(f"Profile {profile} saved"), notes
    state = storage_state(server, profile)
    assert jar_cookies(state) == {"sid": "ended"} and jar_storage(state, "localStorage") == {"lk": "ended"}
    seen = whoami(server, fake, login, profile)
    assert seen["requestCookies"] == {"sid": "ended"} and seen["local"] == {"lk": "ended"}


async def test_a_session_stopped_mid_run_has_saved_its_profile_when_it_reports_stopped(
    server: ServerProcess, fake: FakeProvider, login: LoginSite
) -> None:
    profile = new_profile(server)
    gate = Gate()
    session = run_session(server, fake, gated_login(login, "set?cookie=sid&value=stopped&local=lk", gate), profile)
    try:
        assert gate.wait_entered(120)
        stopped = stop(server, session["id"])
    finally:
        gate.open()
    assert stopped["status"] == "stopped"
    notes = profile_notes(server, session["id"])
    assert notes and notes[-1].startswith(f"Profile {profile} saved"), notes
    state = storage_state(server, profile)
    assert jar_cookies(state) == {"sid": "stopped"} and jar_storage(state, "localStorage") == {"lk": "stopped"}
    seen = whoami(server, fake, login, profile)
    assert seen["requestCookies"] == {"sid": "stopped"} and seen["local"] == {"lk": "stopped"}


async def test_a_keep_alive_turn_saves_before_parking(
    server: ServerProcess, fake: FakeProvider, login: LoginSite
) -> None:
    profile = new_profile(server)
    session = run_session(
        server, fake, [navigate(f"{login.url}/set?cookie=kept&value=k1&local=lk"), done("Ok.")], profile, keepAlive=True
    )
    parked = wait_until_status(server, session["id"], {"idle", "stopped", "error"}, timeout=180)
    assert parked["status"] == "idle" and parked["browserLive"] is True
    state = storage_state(server, profile)
    assert jar_cookies(state) == {"kept": "k1"} and jar_storage(state, "localStorage") == {"lk": "k1"}
    stopped = loopback.post(f"{server.v3}/sessions/{session['id']}/stop", timeout=60).json()
    assert stopped["status"] == "stopped"
    assert jar_cookies(storage_state(server, profile)) == {"kept": "k1"}


async def test_storage_of_an_origin_the_session_left_is_saved(
    server: ServerProcess, fake: FakeProvider, login: LoginSite
) -> None:
    profile = new_profile(server)
    elsewhere = login.url.replace("127.0.0.1", "localhost")  # another origin on the same fixture server
    session = run_session(
        server,
        fake,
        [
            navigate(f"{login.url}/set?cookie=c&value=left&local=lk"),
            navigate(f"{elsewhere}/whoami?tag={token('AWAY')}"),
            done("Moved on."),
        ],
        profile,
    )
    finish(server, session["id"])
    state = storage_state(server, profile)
    assert {o["origin"]: [e["name"] for e in o["localStorage"]] for o in state["origins"]} == {login.url: ["lk"]}
    assert jar_cookies(state) == {"c": "left"}


async def test_a_graceful_shutdown_merges_a_running_sessions_profile(
    start_server: Callable[..., ServerProcess], fake: FakeProvider, login: LoginSite
) -> None:
    own = start_server(**fake.env(), OPENAI_API_STYLE="responses", MAX_CONCURRENT_SESSIONS=1)
    profile = new_profile(own)
    gate = Gate()
    run_session(own, fake, gated_login(login, "set?cookie=late&value=at-shutdown&local=lk", gate), profile)
    try:
        assert gate.wait_entered(120)
        own.stop()
    finally:
        gate.open()
    jar = stored_jar(own, profile)
    assert jar_cookies(jar) == {"late": "at-shutdown"} and jar_storage(jar, "localStorage") == {"lk": "at-shutdown"}


async def test_a_crashed_browser_leaves_the_profile_as_it_was(
    server: ServerProcess, fake: FakeProvider, login: LoginSite
) -> None:
    profile = new_profile(server)
    assert import_state(server, profile, {"cookies": [cookie("sid", "before")]}).status_code == 200
    before = storage_state(server, profile)
    gate = Gate()
    session = run_session(server, fake, gated_login(login, "set?cookie=sid&value=after", gate), profile)
    assert gate.wait_entered(120)
    slots = loopback.get(f"{server.base_url}/health/details", timeout=30).json()["slots"]
    index = next(slot["index"] for slot in slots if slot["owner"] == session["id"])  # not a spare's browser
    browsers = [
        p
        for p in server.children()
        if p.name() == "chromium"
        and not any(a.startswith("--type=") for a in p.cmdline())
        and any(a.endswith(f"/slot-{index}/user-data") for a in p.cmdline())
    ]
    assert len(browsers) == 1
    browsers[0].send_signal(signal.SIGKILL)
    ended = wait_until_status(server, session["id"], {"error", "stopped"}, timeout=120)
    gate.open()
    assert ended["status"] == "error"
    notes = profile_notes(server, session["id"])
    assert notes[-1].startswith(f"Profile {profile} not saved: the browser state could not be read"), notes
    assert storage_state(server, profile) == before


async def test_an_imported_cloud_export_is_used_by_a_session(
    server: ServerProcess, fake: FakeProvider, login: LoginSite
) -> None:
    profile = f"cloud-export.{token('id')}"
    export = {
        "cookies": [
            cookie("sid", "cloud-7", httpOnly=True, secure=False, sameSite="Lax"),
            cookie("pref", "dark", expires=-1, httpOnly=False, secure=False, sameSite="no_restriction"),
        ],
        "origins": [{"origin": login.url, "localStorage": [{"name": "token", "value": "cloud-7"}]}],
    }
    response = import_state(server, profile, export)
    assert response.status_code == 200, response.text
    assert response.json()["id"] == profile and response.json()["cookieDomains"] == ["127.0.0.1"]
    seen = whoami(server, fake, login, profile)
    assert seen["requestCookies"] == {"sid": "cloud-7", "pref": "dark"}
    assert "sid" not in seen["documentCookie"]  # httpOnly survived the import
    assert seen["local"] == {"token": "cloud-7"}
    again = import_state(server, profile, {"cookies": []})
    assert again.status_code == 200
    assert {c["name"] for c in stored_jar(server, profile, "jar_backup")["cookies"]} == {"sid", "pref"}


async def test_a_raw_browser_loads_and_saves_its_profile(server: ServerProcess, login: LoginSite) -> None:
    profile = new_profile(server)
    assert import_state(server, profile, {"cookies": [cookie("sid", "raw-1")]}).status_code == 200
    with httpx.Client(base_url=server.base_url, timeout=120) as http:
        created = http.post("/v3/browsers", json={"profileId": profile})
        assert created.status_code == 201, created.text
        browser = created.json()
        tag = token("RAW")
        cdp_navigate(browser["cdpUrl"], f"{login.url}/whoami?tag={tag}")
        assert login.state.wait_report(tag)["requestCookies"] == {"sid": "raw-1"}
        cdp_navigate(browser["cdpUrl"], f"{login.url}/set?cookie=sid&value=raw-2&local=lk")
        assert http.patch(f"/v3/browsers/{browser['id']}", json={"action": "stop"}).status_code == 200
        refused = http.post("/v3/browsers", json={"profileId": "no-such-profile"})
        assert refused.status_code == 422 and refused.json() == {"detail": "Profile not found"}
    state = storage_state(server, profile)
    assert jar_cookies(state) == {"sid": "raw-2"} and jar_storage(state, "localStorage") == {"lk": "raw-2"}


async def test_a_follow_up_that_changes_the_profile_releases_the_parked_browser(
    server: ServerProcess, fake: FakeProvider, login: LoginSite
) -> None:
    first, second = new_profile(server, "one"), new_profile(server, "two")
    assert import_state(server, first, {"cookies": [cookie("who", "one")]}).status_code == 200
    assert import_state(server, second, {"cookies": [cookie("who", "two")]}).status_code == 200
    marker, tag_one, tag_two = token("SWAP"), token("WHO"), token("WHO")
    fake.script(
        marker,
        [
            navigate(f"{login.url}/whoami?tag={tag_one}"),
            done("One."),
            navigate(f"{login.url}/whoami?tag={tag_two}"),
            done("Two."),
        ],
        when=agent_steps,
    )
    session = create(server, task=f"{marker} Who am I?", keepAlive=True, profileId=first)
    parked = wait_until_status(server, session["id"], {"idle", "stopped", "error"}, timeout=180)
    assert parked["status"] == "idle" and parked["browserLive"] is True
    assert login.state.wait_report(tag_one)["requestCookies"] == {"who": "one"}
    follow = loopback.post(
        f"{server.v3}/sessions",
        json={"sessionId": session["id"], "task": f"{marker} And now?", "profileId": second},
        timeout=60,
    )
    assert follow.status_code == 200, follow.text
    finished = wait_until_status(server, session["id"], {"idle", "stopped", "error"}, timeout=180)
    assert finished["status"] == "idle" and finished["profileId"] == second
    assert login.state.wait_report(tag_two)["requestCookies"] == {"who": "two"}
    summaries = [m["summary"] for m in messages(server, session["id"])]
    assert "Browser released to apply new profile" in summaries
    loopback.post(f"{server.v3}/sessions/{session['id']}/stop", timeout=60)
    assert jar_cookies(storage_state(server, first)) == {"who": "one"}


async def test_profiles_crud_through_the_sdk(
    server: ServerProcess, sdk: Callable[[ServerProcess], AsyncBrowserUse]
) -> None:
    client = sdk(server)
    marker = token("crud")
    created = await client.profiles.create(name=f"{marker}-billing", user_id="user-9")
    assert created.name == f"{marker}-billing" and created.user_id == "user-9" and created.cookie_domains == []
    listed = await client.profiles.list(query=marker.upper(), page_size=5)
    assert [p.id for p in listed.items] == [created.id] and listed.total_items == 1 and listed.page_size == 5
    updated = await client.profiles.update(created.id, name=f"{marker}-renamed")
    assert updated.name == f"{marker}-renamed" and updated.user_id == "user-9"
    assert (await client.profiles.get(created.id)).name == f"{marker}-renamed"
    assert stored_jar(server, str(created.id)) == {"cookies": [], "origins": []}
    await client.profiles.delete(created.id)
    assert stored_jar(server, str(created.id)) is None
    missing = loopback.get(f"{server.v3}/profiles/{created.id}", timeout=30)
    assert missing.status_code == 404 and missing.json() == {"detail": "Profile not found"}
    refused = loopback.post(f"{server.v3}/sessions", json={"task": "x", "profileId": str(created.id)}, timeout=30)
    assert refused.status_code == 422 and refused.json() == {"detail": "Profile not found"}


async def test_profile_api_answers_bad_requests_with_one_sentence(server: ServerProcess) -> None:
    with httpx.Client(base_url=server.v3, timeout=30) as http:
        marker = token("edge")
        created = http.post("/profiles", json={"name": marker, "userId": "u1"}).json()
        put = http.put(f"/profiles/{created['id']}", json={"name": None, "userId": "u2"})
        assert put.status_code == 200 and put.json()["name"] == marker and put.json()["userId"] == "u2"
        assert http.post("/profiles", content=b"").status_code == 201  # a missing body is {}
        for bad_id in ("a..b", "a%20b", "..."):
            refused = http.put(f"/profiles/{bad_id}/storage-state", json={"cookies": []})
            assert refused.status_code == 400 and isinstance(refused.json()["detail"], str), bad_id
        for payload in ([1], {"cookies": "x"}, {"unrelated": True}, None):
            refused = http.put(f"/profiles/{marker}/storage-state", json=payload)
            assert refused.status_code == 400 and isinstance(refused.json()["detail"], str), payload
        assert http.put(f"/profiles/{marker}/storage-state", content=b"{nope").status_code == 400
        assert http.get(f"/profiles/{marker}").status_code == 404  # nothing was created by the refused imports
        listed = http.get("/profiles", params={"pageNumber": 1, "pageSize": 1, "query": marker}).json()
        assert listed["totalItems"] == 1 and listed["pageSize"] == 1 and listed["pageNumber"] == 1
        assert http.get("/profiles", params={"page": 2, "page_size": 1, "query": marker}).json()["items"] == []
        assert http.get("/profiles", params={"page_size": 101}).status_code == 422
        assert http.get("/profiles", params={"query": "x" * 201}).status_code == 422
        for method, path in (
            ("GET", "/profiles/nope/storage-state"),
            ("PATCH", "/profiles/nope"),
            ("DELETE", "/profiles/nope"),
            ("GET", "/profiles/nope"),
        ):
            missing = http.request(method, path, json={})
            assert missing.status_code == 404 and missing.json() == {"detail": "Profile not found"}, (method, path)
