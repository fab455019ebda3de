"""The pure parts of moving jars in and out of a browser: cookie parameters, origins, filling unseen storage."""

from __future__ import annotations

import pytest

from openbrowse.profiles.cdp import StorageRead, cookie_params, web_origin
from openbrowse.profiles.sync import export_origins


def test_cookie_params_drop_what_setcookies_would_misread() -> None:
    params = cookie_params(
        [
            {"name": "s", "value": "1", "domain": "e.com", "expires": -1, "sameParty": False, "size": 2},
            {"name": "p", "value": "2", "domain": "e.com", "expires": 4102444800, "partitionKey": "https://x.com"},
            {"name": "k", "value": "3", "domain": "e.com", "partitionKey": {"topLevelSite": "https://x.com"}},
            {"name": "", "value": "bad", "domain": "e.com"},
        ]
    )
    assert params == [
        {"name": "s", "value": "1", "domain": "e.com"},
        {"name": "p", "value": "2", "domain": "e.com", "expires": 4102444800},
        {"name": "k", "value": "3", "domain": "e.com", "partitionKey": {"topLevelSite": "https://x.com"}},
    ]


@pytest.mark.parametrize(
    ("url", "origin"),
    [
        ("https://App.example.com/path?q=1", "https://app.example.com"),
        ("http://127.0.0.1:8000/", "http://127.0.0.1:8000"),
        ("https://user:pw@e.com/", "https://e.com"),
        ("about:blank", None),
        ("chrome://newtab/", None),
        ("data:text/html,x", None),
        ("", None),
    ],
)
def test_web_origin(url: str, origin: str | None) -> None:
    assert web_origin(url) == origin


def test_storage_the_export_did_not_see_keeps_the_base() -> None:
    base = {
        "cookies": [],
        "origins": [
            {"origin": "https://a.com", "localStorage": [{"name": "k", "value": "1"}], "sessionStorage": []},
            {"origin": "https://b.com", "localStorage": [], "sessionStorage": [{"name": "s", "value": "1"}]},
        ],
    }
    read = StorageRead()
    read.add("https://b.com", [["k", "2"]], None)  # localStorage read, the tab's sessionStorage not visible
    read.add("https://c.com", [], [["t", "3"], ["bad"]])
    origins = {o["origin"]: o for o in export_origins(read, base)}
    assert origins["https://a.com"]["localStorage"] == [{"name": "k", "value": "1"}]
    assert origins["https://b.com"]["localStorage"] == [{"name": "k", "value": "2"}]
    assert origins["https://b.com"]["sessionStorage"] == [{"name": "s", "value": "1"}]
    assert origins["https://c.com"]["sessionStorage"] == [{"name": "t", "value": "3"}]
