"""Profiles end to end: logins persisted across sessions, shared by concurrent sessions, imported, deleted.

A real server with two display slots, real Chromium, the fake provider scripting the agent's navigations, and a
login fixture site that stores a cookie, a localStorage and a sessionStorage value and reports what it sees.
"""

from __future__ import annotations

import json
import signal
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from browser_use_sdk.v3 import AsyncBrowserUse

from tests.e2e.agent_support import agent_steps, create, data_of, messages, stop, token, wait_until_status
from tests.e2e.browser_support import cdp_navigate
from tests.fakes.llm_script import Gate, done, navigate, structured
from tests.fakes.llm_server import FakeProvider
from tests.fakes.login_site import LoginSite
from tests.support.server import ServerProcess

pytestmark = [pytest.mark.e2e, pytest.mark.display, pytest.mark.timeout(420)]


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
    assert "alice-1" not in server.log()


def gated_login(login: LoginSite, query: str, gate: Gate) -> list[Any]:
    return [navigate(f"{login.url}/{query}"), structured(done("Done."), gate=gate)]


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


def import_state(server: ServerProcess, profile_id: str, state: dict[str, Any]) -> httpx.Response:
    return httpx.put(f"{server.v3}/profiles/{profile_id}/storage-state", json=state, timeout=30)


def cookie(name: str, value: str, **extra: Any) -> dict[str, Any]:
    return {"name": name, "value": value, "domain": "127.0.0.1", "path": "/", "expires": 4102444800, **extra}


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
    backup = server.home / "data" / "profiles" / f"{profile}.json.import-bak"
    assert {c["name"] for c in json.loads(backup.read_text())["cookies"]} == {"sid", "pref"}
    assert backup.stat().st_mode & 0o777 == 0o600


async def test_a_profile_deleted_during_a_run_is_not_written(
    server: ServerProcess, fake: FakeProvider, login: LoginSite
) -> None:
    profile = new_profile(server)
    gate = Gate()
    session = run_session(server, fake, gated_login(login, "set?cookie=late&value=v", gate), profile)
    assert gate.wait_entered(120)
    assert httpx.delete(f"{server.v3}/profiles/{profile}", timeout=30).status_code == 204
    gate.open()
    finish(server, session["id"])
    notes = profile_notes(server, session["id"])
    assert notes[-1] == f"Profile {profile} was deleted during the run; its changes were discarded.", notes
    assert not (server.home / "data" / "profiles" / f"{profile}.json").exists()
    assert httpx.get(f"{server.v3}/profiles/{profile}/storage-state", timeout=30).status_code == 404


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
    stopped = httpx.post(f"{server.v3}/sessions/{session['id']}/stop", timeout=60).json()
    assert stopped["status"] == "stopped"
    assert jar_cookies(storage_state(server, profile)) == {"kept": "k1"}


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
    jar = Path(server.home / "data" / "profiles" / f"{created.id}.json")
    assert jar.stat().st_mode & 0o777 == 0o600 and jar.parent.stat().st_mode & 0o777 == 0o700
    await client.profiles.delete(created.id)
    assert not jar.exists()
    missing = httpx.get(f"{server.v3}/profiles/{created.id}", timeout=30)
    assert missing.status_code == 404 and missing.json() == {"detail": "Profile not found"}
    refused = httpx.post(f"{server.v3}/sessions", json={"task": "x", "profileId": str(created.id)}, timeout=30)
    assert refused.status_code == 422 and refused.json() == {"detail": "Profile not found"}


async def test_a_crashed_browser_leaves_the_profile_as_it_was(
    server: ServerProcess, fake: FakeProvider, login: LoginSite
) -> None:
    profile = new_profile(server)
    assert import_state(server, profile, {"cookies": [cookie("sid", "before")]}).status_code == 200
    before = storage_state(server, profile)
    gate = Gate()
    session = run_session(server, fake, gated_login(login, "set?cookie=sid&value=after", gate), profile)
    assert gate.wait_entered(120)
    slots = httpx.get(f"{server.base_url}/health/details", timeout=30).json()["slots"]
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
    follow = httpx.post(
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
    httpx.post(f"{server.v3}/sessions/{session['id']}/stop", timeout=60)
    assert jar_cookies(storage_state(server, first)) == {"who": "one"}


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
    jar = json.loads((own.home / "data" / "profiles" / f"{profile}.json").read_text())
    assert jar_cookies(jar) == {"late": "at-shutdown"} and jar_storage(jar, "localStorage") == {"lk": "at-shutdown"}


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
    follow = httpx.post(f"{server.v3}/sessions", json={"sessionId": keeper["id"], "task": "Look again."}, timeout=60)
    assert follow.status_code == 200, follow.text
    assert "x" not in login.state.wait_report(tag)["requestCookies"]  # this browser still has no x
    assert wait_until_status(server, keeper["id"], {"idle", "stopped", "error"}, timeout=180)["status"] == "idle"
    assert jar_cookies(storage_state(server, profile)) == {"x": "new"}
    httpx.post(f"{server.v3}/sessions/{keeper['id']}/stop", timeout=60)
    assert jar_cookies(storage_state(server, profile)) == {"x": "new"}


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
