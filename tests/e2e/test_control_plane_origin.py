"""Spec §25.2 on a real server: an Origin must be the request's own (or listed in CORS_ORIGINS), the dashboard's
ambient credentials work only from this server's own pages, live view included, and ``HOST`` is loopback only
when it is exactly a loopback name or address.

Every request goes to 127.0.0.1; the foreign origins are only named in headers, as a browser would send them.
"""

from __future__ import annotations

import base64
import json
import subprocess
import sys
from pathlib import Path

import pytest
import websockets
from websockets.exceptions import InvalidStatus

from tests.conftest import StartServer
from tests.support import loopback
from tests.support.ports import free_port
from tests.support.server import ServerProcess

pytestmark = pytest.mark.e2e

KEY = "origin-key"
PASSWORD = "origin-dashboard-pw"
BASIC = {"Authorization": "Basic " + base64.b64encode(f"admin:{PASSWORD}".encode()).decode()}
GOOD = {"Authorization": f"Bearer {KEY}"}
CROSS_SITE = "Another site's page may not use the dashboard's credentials; send the API key instead"


def total_sessions(server: ServerProcess) -> int:
    return int(loopback.get(f"{server.v3}/sessions", headers=GOOD).json()["total"])


def test_a_wildcard_bind_does_not_admit_every_ip_literal_origin(start_server: StartServer) -> None:
    server = start_server(HOST="0.0.0.0", API_KEY=KEY, DASHBOARD_PASSWORD=PASSWORD)
    own_port = f":{server.port}"
    for origin in (f"http://10.9.8.7{own_port}", f"http://192.0.2.1{own_port}", f"http://[2001:db8::1]{own_port}"):
        answer = loopback.post(f"{server.v3}/sessions", json={}, headers={"Origin": origin, **GOOD})
        assert answer.status_code == 403 and answer.json() == {"detail": "Origin not allowed"}, origin
    own = loopback.post(f"{server.v3}/sessions", json={}, headers={"Origin": server.base_url, **GOOD})
    assert own.status_code == 200
    assert total_sessions(server) == 1


def test_allowed_hosts_star_does_not_admit_every_origin(start_server: StartServer) -> None:
    server = start_server(API_KEY=KEY, ALLOWED_HOSTS="*")
    by_name = {"Host": f"any.example:{server.port}", **GOOD}
    assert loopback.get(f"{server.v3}/sessions", headers=by_name).status_code == 200
    for origin in (f"http://evil.example:{server.port}", f"http://localhost:{server.port}"):
        answer = loopback.post(f"{server.v3}/sessions", json={}, headers={"Origin": origin, **GOOD})
        assert answer.status_code == 403, origin  # neither is the origin this request was sent to
    reached_by_name = {**by_name, "Origin": f"http://any.example:{server.port}"}
    assert loopback.post(f"{server.v3}/sessions", json={}, headers=reached_by_name).status_code == 200
    assert int(loopback.get(f"{server.v3}/sessions", headers=GOOD).json()["total"]) == 1


async def test_a_cors_origin_cannot_use_cached_basic_credentials_anywhere(start_server: StartServer) -> None:
    partner = f"http://127.0.0.1:{free_port()}"
    server = start_server(API_KEY=KEY, DASHBOARD_PASSWORD=PASSWORD, CORS_ORIGINS=partner)
    shell = loopback.post(f"{server.v3}/sessions", json={}, headers=GOOD).json()["id"]
    from_partner = {"Origin": partner, "Sec-Fetch-Site": "same-site", **BASIC}
    for method, path, body in (
        ("POST", f"/vnc/{shell}/control", {"enabled": True}),
        ("GET", f"/vnc/{shell}/view", None),
        ("POST", "/v3/sessions", {}),
        ("GET", "/", None),
    ):
        answer = loopback.request(method, server.base_url + path, json=body, headers=from_partner)
        assert answer.status_code == 403 and answer.json() == {"detail": CROSS_SITE}, path
    with pytest.raises(InvalidStatus) as refused:
        async with websockets.connect(
            f"ws://127.0.0.1:{server.port}/vnc/{shell}/websockify",
            origin=websockets.Origin(partner),
            additional_headers=BASIC,
        ):
            pass
    assert refused.value.response.status_code == 403
    assert json.loads(refused.value.response.body) == {"detail": CROSS_SITE}
    # the partner's own calls with the API key still work, and the same credentials work from this server's pages
    assert loopback.get(f"{server.v3}/sessions", headers={"Origin": partner, **GOOD}).status_code == 200
    own = {"Origin": server.base_url, "Sec-Fetch-Site": "same-origin", **BASIC}
    assert loopback.post(f"{server.v3}/sessions", json={}, headers=own).status_code == 200
    assert (
        loopback.post(f"{server.base_url}/vnc/{shell}/control", json={"enabled": True}, headers=own).status_code == 404
    )
    assert total_sessions(server) == 2  # the shell and the same-origin one; the refused POST created nothing


def serve_once(home: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "openbrowse", "serve", "--port", "0"],
        env={"OPENBROWSE_HOME": str(home), "PATH": "/usr/bin:/bin", **env},
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_a_host_name_that_starts_with_127_is_not_loopback(tmp_path: Path) -> None:
    result = serve_once(tmp_path, HOST="127.example.com")
    assert result.returncode == 2, result.stderr[-2000:]
    assert "API_KEY" in result.stderr and "HOST=127.example.com" in result.stderr


def test_a_public_bind_with_an_api_key_needs_a_dashboard_password(tmp_path: Path) -> None:
    result = serve_once(tmp_path, HOST="0.0.0.0", API_KEY=KEY)
    assert result.returncode == 2, result.stderr[-2000:]
    assert "DASHBOARD_PASSWORD" in result.stderr


def test_a_loopback_key_without_a_dashboard_password_turns_basic_off(start_server: StartServer) -> None:
    server = start_server(API_KEY=KEY)
    assert "DASHBOARD_PASSWORD is not set" in server.log()
    as_key = {"Authorization": "Basic " + base64.b64encode(f"admin:{KEY}".encode()).decode()}
    refused = loopback.get(f"{server.v3}/sessions", headers=as_key)
    assert refused.status_code == 401 and "www-authenticate" not in refused.headers
    assert loopback.get(f"{server.base_url}/", headers=GOOD).status_code == 200
