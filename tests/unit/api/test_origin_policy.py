"""Which Host names and Origins are served (spec §2.2), decided without a server."""

from __future__ import annotations

from pathlib import Path

import pytest

from openbrowse.api.origin_guard import OriginPolicy, normalize_origin
from openbrowse.config import Settings


def policy(tmp_path: Path, **settings: str) -> OriginPolicy:
    """The policy of ``settings``; with a key, which the proxy settings require (``Settings._refuse_keyless_proxy``)."""
    return OriginPolicy.from_settings(Settings(OPENBROWSE_HOME=tmp_path, **{"API_KEY": "k", **settings}))  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "host",
    ["127.0.0.1:8420", "localhost:8420", "LOCALHOST", "[::1]:8420", "127.0.0.2", "app.localhost:8420", "localhost."],
)
def test_loopback_names_are_always_served(tmp_path: Path, host: str) -> None:
    assert policy(tmp_path).host_allowed(host)


@pytest.mark.parametrize(
    "host",
    [None, "", "evil.example", "evil.example:8420", "localhost.evil.example", "127.0.0.1.evil.example", "10.0.0.5"],
)
def test_other_names_are_refused_by_default(tmp_path: Path, host: str | None) -> None:
    assert not policy(tmp_path).host_allowed(host)


def test_allowed_hosts_and_the_bind_address(tmp_path: Path) -> None:
    named = policy(
        tmp_path, HOST="10.0.0.5", API_KEY="k", DASHBOARD_PASSWORD="pw", ALLOWED_HOSTS="api.example, *.corp.example"
    )
    assert named.host_allowed("10.0.0.5:8420") and named.host_allowed("api.example")
    assert named.host_allowed("x.corp.example") and not named.host_allowed("corp.example.evil")
    assert not named.host_allowed("10.0.0.6")
    wildcard = policy(tmp_path, HOST="0.0.0.0", API_KEY="k", DASHBOARD_PASSWORD="pw")
    assert wildcard.host_allowed("192.0.2.7:8420") and wildcard.host_allowed("[2001:db8::1]:8420")
    assert not wildcard.host_allowed("rebound.example")  # an address cannot be rebound; a name can


def test_own_origin_is_the_scheme_and_host_the_request_came_with(tmp_path: Path) -> None:
    rules = policy(tmp_path)
    assert rules.origin_allowed("http://127.0.0.1:8420", host_header="127.0.0.1:8420", scheme="http")
    assert rules.origin_allowed("http://localhost:8420", host_header="localhost:8420", scheme="ws")
    assert rules.origin_allowed("http://LOCALHOST:80", host_header="localhost", scheme="http")
    assert not rules.origin_allowed("http://localhost:8420", host_header="127.0.0.1:8420", scheme="http")
    assert not rules.origin_allowed("http://localhost:3000", host_header="127.0.0.1:8420", scheme="http")
    assert not rules.origin_allowed("https://127.0.0.1:8420", host_header="127.0.0.1:8420", scheme="http")
    assert not rules.origin_allowed("http://evil.example:8420", host_header="127.0.0.1:8420", scheme="http")
    assert not rules.origin_allowed("null", host_header="127.0.0.1:8420", scheme="http")
    behind_tls = policy(tmp_path, ALLOWED_HOSTS="api.example")
    assert behind_tls.origin_allowed("https://api.example", host_header="api.example", scheme="https")


def test_cors_origins_are_matched_normalised(tmp_path: Path) -> None:
    rules = policy(tmp_path, CORS_ORIGINS="https://App.Example:443/, http://tool.example:9000")
    assert rules.origin_allowed("https://app.example", host_header="127.0.0.1:8420", scheme="http")
    assert rules.origin_allowed("http://tool.example:9000", host_header="127.0.0.1:8420", scheme="http")
    assert not rules.origin_allowed("http://tool.example", host_header="127.0.0.1:8420", scheme="http")
    assert normalize_origin("HTTP://[::1]:80") == "http://[::1]"
    assert normalize_origin("https://a.example/path") is None
    assert normalize_origin("file://") is None


def test_host_allow_listing_alone_does_not_admit_an_origin(tmp_path: Path) -> None:
    """Spec §25.2: every IP literal passes the Host check of a wildcard bind, every name passes ``*``; a page
    served under one of them is still another origin than the one the request was sent to."""
    wildcard = policy(tmp_path, HOST="0.0.0.0", API_KEY="k", DASHBOARD_PASSWORD="pw")
    assert wildcard.host_allowed("192.0.2.7:8420")
    assert not wildcard.origin_allowed("http://192.0.2.7:8420", host_header="127.0.0.1:8420", scheme="http")
    assert not wildcard.origin_allowed("http://[2001:db8::1]:8420", host_header="192.0.2.9:8420", scheme="http")
    assert wildcard.origin_allowed("http://192.0.2.7:8420", host_header="192.0.2.7:8420", scheme="http")
    anything = policy(tmp_path, ALLOWED_HOSTS="*")
    assert anything.host_allowed("evil.example:8420")
    assert not anything.origin_allowed("http://evil.example:8420", host_header="127.0.0.1:8420", scheme="http")
    assert not anything.origin_allowed("http://evil.example:8420", host_header="api.example:8420", scheme="http")
