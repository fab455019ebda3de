"""Who may use the dashboard, and why its Basic credentials open the API only to its own pages (spec §2.1, §19.4)."""

from __future__ import annotations

import base64

import pytest
from starlette.requests import Request

from openbrowse.api.auth import Authenticator, AuthFailed
from openbrowse.config import Settings

KEY = "k3y"
HOST = "127.0.0.1:8420"


def request(**headers: str) -> Request:
    raw = [(b"host", HOST.encode())] + [(k.replace("_", "-").lower().encode(), v.encode()) for k, v in headers.items()]
    return Request({"type": "http", "method": "GET", "path": "/", "headers": raw, "client": ("127.0.0.1", 1)})


def basic(user: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


@pytest.fixture
def auth(tmp_path: object) -> Authenticator:
    return Authenticator(Settings(API_KEY=KEY, OPENBROWSE_HOME=tmp_path))


def test_dashboard_takes_basic_or_the_api_key(auth: Authenticator) -> None:
    auth.require_dashboard(request(authorization=basic("admin", KEY)))
    auth.require_dashboard(request(authorization=f"Bearer {KEY}"))
    auth.require_dashboard(request(x_browser_use_api_key=KEY))
    auth.require_dashboard(request(authorization=basic("admin", KEY), sec_fetch_site="cross-site"))  # a link
    for refused in (request(), request(authorization=basic("admin", "nope")), request(authorization=basic("x", KEY))):
        with pytest.raises(AuthFailed):
            auth.require_dashboard(refused)


def test_dashboard_password_replaces_the_api_key_for_basic(tmp_path: object) -> None:
    auth = Authenticator(Settings(API_KEY=KEY, DASHBOARD_USER="ops", DASHBOARD_PASSWORD="pw", OPENBROWSE_HOME=tmp_path))
    auth.require_dashboard(request(authorization=basic("ops", "pw")))
    with pytest.raises(AuthFailed):
        auth.require_dashboard(request(authorization=basic("ops", KEY)))


def test_api_takes_basic_only_from_this_sites_pages(auth: Authenticator) -> None:
    credentials = basic("admin", KEY)
    auth.require_api_key(request(authorization=credentials))
    auth.require_api_key(request(authorization=credentials, sec_fetch_site="same-origin", origin=f"http://{HOST}"))
    for cross_site in (
        {"sec_fetch_site": "cross-site"},
        {"sec_fetch_site": "same-site"},
        {"origin": "http://evil.example"},
        {"origin": "http://127.0.0.1:9999"},
    ):
        with pytest.raises(AuthFailed):
            auth.require_api_key(request(authorization=credentials, **cross_site))
    auth.require_api_key(request(authorization=f"Bearer {KEY}", origin="http://evil.example"))  # a key is no ambient
