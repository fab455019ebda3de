"""The failed-auth throttle counts an IPv6 client by its /64 (spec §2.1, issue 19): one host holds a whole /64."""

from __future__ import annotations

from pathlib import Path

import pytest
from starlette.requests import Request

from openbrowse.api.auth import Authenticator, AuthFailed, AuthThrottled
from openbrowse.config import Settings


def wrong_key_from(address: str) -> Request:
    headers = [(b"host", b"127.0.0.1:8420"), (b"authorization", b"Bearer wrong")]
    return Request(
        {"type": "http", "method": "GET", "path": "/v3/sessions", "headers": headers, "client": (address, 1)}
    )


def test_rotating_addresses_inside_one_64_buys_no_guesses(tmp_path: Path) -> None:
    auth = Authenticator(Settings(API_KEY="k3y", OPENBROWSE_HOME=tmp_path))
    for n in range(1, 7):  # 5 free failures, the 6th locks: each from a new address of the same /64
        with pytest.raises(AuthFailed):
            auth.require_api_key(wrong_key_from(f"2001:db8:1:2::{n:x}"))
    with pytest.raises(AuthThrottled):
        auth.require_api_key(wrong_key_from("2001:db8:1:2:ffff:ffff:ffff:ffff"))
    with pytest.raises(AuthFailed):  # the neighbouring /64 is somebody else
        auth.require_api_key(wrong_key_from("2001:db8:1:3::1"))


def test_ipv4_clients_and_mapped_ones_count_per_address(tmp_path: Path) -> None:
    auth = Authenticator(Settings(API_KEY="k3y", OPENBROWSE_HOME=tmp_path))
    for _ in range(6):
        with pytest.raises(AuthFailed):
            auth.require_api_key(wrong_key_from("198.51.100.7"))
    with pytest.raises(AuthThrottled):
        auth.require_api_key(wrong_key_from("::ffff:198.51.100.7"))  # the same client over a dual-stack socket
    with pytest.raises(AuthFailed):
        auth.require_api_key(wrong_key_from("198.51.100.8"))
