"""Who may use the dashboard, and why its credentials open anything only to its own pages (spec §2.1, §19.4, §25.2)."""

from __future__ import annotations

import base64

import pytest
from starlette.requests import Request

from openbrowse.api.auth import Authenticator, AuthFailed, CrossSiteCredentials
from openbrowse.api.login_sessions import LoginSessions, cookie_name
from openbrowse.config import Settings

KEY = "k3y"
PASSWORD = "dashboard-pw"
HOST = "127.0.0.1:8420"


def request(cookie: str | None = None, **headers: str) -> Request:
    raw = [(b"host", HOST.encode())] + [(k.replace("_", "-").lower().encode(), v.encode()) for k, v in headers.items()]
    if cookie is not None:
        raw.append((b"cookie", f"openbrowse_dashboard_8420={cookie}".encode()))
    scope = {
        "type": "http",
        "method": "GET",
        "path": "/",
        "query_string": b"",
        "headers": raw,
        "client": ("127.0.0.1", 1),
    }
    scope["scheme"] = "http"
    return Request(scope)


def basic(user: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


@pytest.fixture
def auth(tmp_path: object) -> Authenticator:
    return Authenticator(Settings(API_KEY=KEY, DASHBOARD_PASSWORD=PASSWORD, OPENBROWSE_HOME=tmp_path))


def test_dashboard_takes_its_own_password_or_the_api_key(auth: Authenticator) -> None:
    auth.require_dashboard(request(authorization=basic("admin", PASSWORD)))
    auth.require_dashboard(request(authorization=f"Bearer {KEY}"))
    auth.require_dashboard(request(x_browser_use_api_key=KEY))
    auth.require_dashboard(request(authorization=basic("admin", PASSWORD), sec_fetch_site="none"))  # address bar
    for refused in (
        request(),
        request(authorization=basic("admin", "nope")),
        request(authorization=basic("x", PASSWORD)),
        request(authorization=basic("admin", KEY)),  # the API key is no dashboard password
    ):
        with pytest.raises(AuthFailed):
            auth.require_dashboard(refused)


def test_without_a_dashboard_password_only_the_key_opens_the_dashboard(tmp_path: object) -> None:
    auth = Authenticator(Settings(API_KEY=KEY, OPENBROWSE_HOME=tmp_path))
    auth.require_dashboard(request(authorization=f"Bearer {KEY}"))
    with pytest.raises(AuthFailed) as refused:
        auth.require_dashboard(request(authorization=basic("admin", KEY)))
    assert not refused.value.challenge  # no Basic prompt that could never succeed
    assert not auth.login_available


@pytest.mark.parametrize(
    "cross_site",
    [
        {"sec_fetch_site": "cross-site"},
        {"sec_fetch_site": "same-site"},  # another port of this host is the same site, but anybody's server
        {"origin": "http://evil.example"},
        {"origin": "http://127.0.0.1:9999"},
        {"origin": "http://localhost:8420"},  # not the origin this request was sent to
        {"origin": "null"},
    ],
)
def test_basic_and_the_cookie_are_refused_from_other_pages_on_every_route(
    auth: Authenticator, cross_site: dict[str, str]
) -> None:
    token = auth.logins.open()
    for credentials in ({"authorization": basic("admin", PASSWORD)}, {"cookie": token}):
        for route in (auth.require_api_key, auth.require_dashboard, lambda conn: auth.require_viewer(conn, "id")):
            with pytest.raises(CrossSiteCredentials) as refused:
                route(request(**credentials, **cross_site))
            assert refused.value.status_code == 403 and "API key" in refused.value.detail
    assert len(auth.throttle) == 0  # not counted as guesses: a foreign page cannot lock the owner out


def test_same_origin_pages_and_scripts_use_them(auth: Authenticator) -> None:
    token = auth.logins.open()
    own = {"sec_fetch_site": "same-origin", "origin": f"http://{HOST}"}
    for credentials in ({"authorization": basic("admin", PASSWORD)}, {"cookie": token}):
        auth.require_api_key(request(**credentials))
        auth.require_api_key(request(**credentials, **own))
        auth.require_viewer(request(**credentials, **own), None)
    auth.require_api_key(request(authorization=f"Bearer {KEY}", origin="http://evil.example"))  # a key is not ambient


def test_a_closed_or_expired_login_opens_nothing_and_is_not_counted(tmp_path: object) -> None:
    now = [1000.0]
    logins = LoginSessions(clock=lambda: now[0], lifetime=60)
    auth = Authenticator(Settings(API_KEY=KEY, DASHBOARD_PASSWORD=PASSWORD, OPENBROWSE_HOME=tmp_path), logins=logins)
    closed, expiring = logins.open(), logins.open()
    logins.close(closed)
    auth.require_api_key(request(cookie=expiring))
    now[0] += 61
    for token in (closed, expiring, "forged"):
        for _ in range(8):  # a dashboard tab left open keeps polling with its stale cookie
            with pytest.raises(AuthFailed) as refused:
                auth.require_api_key(request(cookie=token))
            assert not refused.value.challenge
    assert len(auth.throttle) == 0 and len(logins) == 0


def test_the_cookie_is_named_per_port() -> None:
    assert cookie_name(request()) == "openbrowse_dashboard_8420"
