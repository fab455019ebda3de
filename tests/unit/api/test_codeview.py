"""``GET /codeview``: the code tab's page is served without credentials, locked down, behind the Host/Origin guard."""

from __future__ import annotations

import base64
import hashlib
import re
from pathlib import Path

import httpx
import pytest

from openbrowse.app import create_app
from openbrowse.config import Settings


def client(tmp_path: Path) -> httpx.AsyncClient:
    app = create_app(Settings(API_KEY="secret-key", OPENBROWSE_HOME=tmp_path))
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1:8420")


def inline_hash(html: str, tag: str) -> str:
    match = re.search(rf"<{tag}>(.*?)</{tag}>", html, re.S)
    assert match is not None
    return "'sha256-" + base64.b64encode(hashlib.sha256(match.group(1).encode()).digest()).decode() + "'"


async def test_served_without_credentials_and_allowed_to_run_only_its_own_inline_code(tmp_path: Path) -> None:
    async with client(tmp_path) as http:
        response = await http.get("/codeview")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/html")
    html = response.text
    assert "window.__setCode = (name, code, status)" in html
    assert "secret-key" not in html
    policy = response.headers["content-security-policy"]
    assert policy.startswith("default-src 'none';")
    assert f"script-src {inline_hash(html, 'script')};" in policy
    assert f"style-src {inline_hash(html, 'style')};" in policy
    assert response.headers["cache-control"] == "no-store"


async def test_the_host_and_origin_guard_still_applies(tmp_path: Path) -> None:
    async with client(tmp_path) as http:
        foreign_origin = await http.get("/codeview", headers={"Origin": "https://evil.example"})
        rebound = await http.get("/codeview", headers={"Host": "evil.example"})
    assert foreign_origin.status_code == 403
    assert rebound.status_code == 400


@pytest.mark.parametrize(
    ("host", "port", "url"),
    [
        ("127.0.0.1", 8420, "http://127.0.0.1:8420/codeview"),
        ("localhost", 9000, "http://127.0.0.1:9000/codeview"),
        ("0.0.0.0", 8420, "http://127.0.0.1:8420/codeview"),
        ("::", 8420, "http://127.0.0.1:8420/codeview"),
        ("::1", 8420, "http://[::1]:8420/codeview"),
        ("10.1.2.3", 8420, "http://10.1.2.3:8420/codeview"),
        ("127.0.0.1", 0, None),
    ],
)
def test_the_url_a_sessions_chromium_uses(tmp_path: Path, host: str, port: int, url: str | None) -> None:
    settings = Settings(HOST=host, PORT=port, API_KEY="k", DASHBOARD_PASSWORD="pw", OPENBROWSE_HOME=tmp_path)
    assert settings.codeview_url == url
