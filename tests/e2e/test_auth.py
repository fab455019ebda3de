"""Authentication on a server with API_KEY set, and the refusal to serve a public bind without one."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable

import httpx
import pytest
import websockets
from browser_use_sdk import BrowserUseError
from browser_use_sdk.v3 import AsyncBrowserUse
from websockets.exceptions import InvalidStatus

from tests.conftest import StartServer
from tests.support import loopback
from tests.support.server import ServerProcess

pytestmark = pytest.mark.e2e


async def test_api_key_is_required_and_checked(start_server: StartServer, sdk: Callable[..., AsyncBrowserUse]) -> None:
    server = start_server(API_KEY="s3cret")
    with httpx.Client(base_url=server.base_url) as http:
        assert http.get("/health").status_code == 200
        missing = http.get("/v3/sessions")
        assert missing.status_code == 401 and missing.json() == {"detail": "Invalid API key"}
        assert http.get("/health/details").status_code == 401
        assert http.get("/v3/sessions", headers={"Authorization": "Bearer s3cret"}).status_code == 200
        assert http.get("/v3/sessions", headers={"X-Browser-Use-API-Key": "s3cret"}).status_code == 200
        both = {"X-Browser-Use-API-Key": "s3cret", "Authorization": "Bearer wrong"}
        assert http.get("/v3/sessions", headers=both).status_code == 200
        wrong_first = {"X-Browser-Use-API-Key": "wrong", "Authorization": "Bearer s3cret"}
        assert http.get("/v3/sessions", headers=wrong_first).status_code == 401
    good = sdk(server, api_key="s3cret")
    assert (await good.sessions.create()).status.value == "created"
    bad = sdk(server, api_key="nope")
    with pytest.raises(BrowserUseError) as refused:
        await bad.sessions.list()
    assert refused.value.status_code == 401


def client_from(server: ServerProcess, address: str) -> httpx.Client:
    """A client whose connections come from ``address`` (any 127.x address is this machine)."""
    return httpx.Client(base_url=server.base_url, transport=httpx.HTTPTransport(local_address=address))


def guesses(http: httpx.Client, forwarded: list[str | None]) -> list[int]:
    statuses = []
    for hop in forwarded:
        headers = {"Authorization": "Bearer wrong"} | ({"X-Forwarded-For": hop} if hop else {})
        statuses.append(http.get("/v3/sessions", headers=headers).status_code)
    return statuses


GOOD = {"Authorization": "Bearer s3cret"}


def test_failed_attempts_are_throttled_per_socket_peer(start_server: StartServer) -> None:
    server = start_server(API_KEY="s3cret")
    with client_from(server, "127.0.0.2") as attacker, client_from(server, "127.0.0.3") as other:
        assert guesses(attacker, [None] * 7) == [401] * 6 + [429]
        locked = attacker.get("/v3/sessions", headers=GOOD)
        assert locked.status_code == 429 and int(locked.headers["Retry-After"]) >= 1
        assert "Too many failed authentication attempts" in locked.json()["detail"]
        assert other.get("/v3/sessions", headers=GOOD).status_code == 200

    with client_from(server, "127.0.0.4") as rotating:  # a new X-Forwarded-For per guess buys nothing
        assert guesses(rotating, [f"203.0.113.{n}" for n in range(7)]) == [401] * 6 + [429]

    with client_from(server, "127.0.0.5") as framer, client_from(server, "127.0.0.6") as victim:
        assert guesses(framer, ["127.0.0.6"] * 7)[-1] == 429  # naming the victim locks only the sender
        assert victim.get("/v3/sessions", headers=GOOD).status_code == 200


LONG_KEY = "k" * 32


def test_guesses_from_a_shared_address_never_lock_out_a_long_key(start_server: StartServer) -> None:
    """Behind a proxy not named in FORWARDED_ALLOW_IPS every client is the proxy's address: a stranger's guesses
    from there lock the address, yet the holder of a (long) key is still let in; a short key is not."""
    server = start_server(API_KEY=LONG_KEY)
    with client_from(server, "127.0.0.10") as proxy:
        assert guesses(proxy, [None] * 7) == [401] * 6 + [429]
        assert proxy.get("/v3/sessions", headers={"Authorization": f"Bearer {LONG_KEY}"}).status_code == 200
        assert proxy.get("/v3/sessions", headers={"X-Browser-Use-API-Key": LONG_KEY}).status_code == 200
        assert proxy.get("/v3/sessions", headers={"Authorization": f"Bearer {LONG_KEY[:-1]}x"}).status_code == 429
    assert "shorter than" not in server.log()


def test_x_forwarded_for_counts_only_from_a_trusted_proxy(start_server: StartServer) -> None:
    server = start_server(API_KEY="s3cret", FORWARDED_ALLOW_IPS="127.0.0.7")
    with client_from(server, "127.0.0.7") as proxy, client_from(server, "127.0.0.8") as direct:
        assert guesses(proxy, ["203.0.113.9"] * 7)[-1] == 429
        assert proxy.get("/v3/sessions", headers={"X-Forwarded-For": "203.0.113.9", **GOOD}).status_code == 429
        assert proxy.get("/v3/sessions", headers={"X-Forwarded-For": "198.51.100.1", **GOOD}).status_code == 200
        spoofed = direct.get("/v3/sessions", headers={"X-Forwarded-For": "203.0.113.9", **GOOD})
        assert spoofed.status_code == 200  # not a trusted proxy: its header names nobody


def test_a_short_key_is_warned_about(start_server: StartServer) -> None:
    server = start_server(API_KEY="s3cret")
    assert "API_KEY is shorter than 32 characters" in server.log()


def test_public_bind_without_api_key_refuses_to_start(tmp_path: object) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "openbrowse", "serve", "--host", "0.0.0.0", "--port", "0"],
        env={"OPENBROWSE_HOME": str(tmp_path), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2
    assert "API_KEY" in result.stderr and "0.0.0.0" in result.stderr


@pytest.mark.parametrize(
    ("setting", "value", "sentence"),
    [
        ("FORWARDED_ALLOW_IPS", "127.0.0.1", "FORWARDED_ALLOW_IPS says the server is reached through a proxy"),
        ("ALLOWED_HOSTS", "browser.example.com", "ALLOWED_HOSTS says the server is reached through a proxy"),
        ("CORS_ORIGINS", "https://app.example.com", "CORS_ORIGINS says the server is reached through a proxy"),
        ("ALLOWED_HOSTS", "*", "ALLOWED_HOSTS=* accepts any Host header, so API_KEY must be set"),
    ],
)
def test_a_proxied_loopback_bind_without_api_key_refuses_to_start(
    tmp_path: object, setting: str, value: str, sentence: str
) -> None:
    """``HOST=127.0.0.1`` behind nginx is reachable by anyone nginx serves: the loopback bind proves nothing."""
    result = subprocess.run(
        [sys.executable, "-m", "openbrowse", "serve", "--host", "127.0.0.1", "--port", "0"],
        env={"OPENBROWSE_HOME": str(tmp_path), "PATH": "/usr/bin:/bin", setting: value},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2, result.stderr
    assert sentence in result.stderr and "API_KEY must be set" in result.stderr


def test_loopback_without_api_key_says_so(start_server: StartServer) -> None:
    server: ServerProcess = start_server()
    assert "serving without authentication" in server.log()
    assert loopback.get(f"{server.v3}/sessions").status_code == 200


async def test_websockets_check_credentials_before_accepting(start_server: StartServer) -> None:
    server = start_server(API_KEY="s3cret")
    some_id = "00000000-0000-4000-8000-000000000000"
    ws_base = f"ws://127.0.0.1:{server.port}"
    for path in (f"/vnc/{some_id}/websockify?token=wrong", f"/v3/browsers/{some_id}/cdp?token=wrong"):
        with pytest.raises(InvalidStatus) as refused:
            async with websockets.connect(ws_base + path):
                pass
        assert refused.value.response.status_code == 401, path
        assert json.loads(refused.value.response.body) == {"detail": "Invalid API key"}
    for _ in range(4):
        with pytest.raises(InvalidStatus):
            async with websockets.connect(f"{ws_base}/vnc/{some_id}/websockify"):
                pass
    with pytest.raises(InvalidStatus) as throttled:
        async with websockets.connect(f"{ws_base}/v3/browsers/{some_id}/cdp", additional_headers=GOOD):
            pass
    assert throttled.value.response.status_code == 429
    assert int(throttled.value.response.headers["Retry-After"]) >= 1
    another_peer = {"local_addr": ("127.0.0.9", 0)}
    url = f"{ws_base}/v3/browsers/{some_id}/cdp"
    async with websockets.connect(url, additional_headers=GOOD, **another_peer) as socket:  # type: ignore[arg-type]
        with pytest.raises(websockets.ConnectionClosed) as closed:
            await socket.recv()
    assert closed.value.rcvd is not None and closed.value.rcvd.code == 1011  # let in; no such browser
