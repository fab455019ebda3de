"""Normalisation of imported storage states (spec §9.1) and the id rule for imported profiles (spec §2.2)."""

from __future__ import annotations

from typing import Any

import pytest

from openbrowse.domain.profiles import is_valid_profile_id
from openbrowse.errors import MalformedRequest
from openbrowse.profiles.jar import cookie_domains, normalise_cookie, normalise_state, read_jar


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (
            {"name": "a", "value": "1", "domain": ".e.com", "size": 3, "session": False, "sameSite": "lax"},
            {"name": "a", "value": "1", "domain": ".e.com", "sameSite": "Lax"},
        ),
        ({"name": "a", "value": "1", "url": "https://e.com"}, {"name": "a", "value": "1", "url": "https://e.com"}),
        (
            {"name": "a", "value": 5, "domain": "e.com", "sameSite": "STRICT"},
            {"name": "a", "value": "5", "domain": "e.com", "sameSite": "Strict"},
        ),
        (
            {"name": "a", "value": "1", "domain": "e.com", "sameSite": "no_restriction", "secure": True},
            {"name": "a", "value": "1", "domain": "e.com", "sameSite": "None", "secure": True},
        ),
        (
            {"name": "a", "value": "1", "domain": "e.com", "sameSite": "None"},
            {"name": "a", "value": "1", "domain": "e.com"},
        ),
        (
            {"name": "a", "value": "1", "domain": "e.com", "sameSite": "weird"},
            {"name": "a", "value": "1", "domain": "e.com"},
        ),
        (
            {"name": "a", "value": "", "domain": "e.com", "expires": -1},
            {"name": "a", "value": "", "domain": "e.com", "expires": -1},
        ),
        ({"value": "1", "domain": "e.com"}, None),
        ({"name": "", "value": "1", "domain": "e.com"}, None),
        ({"name": "a", "value": None, "domain": "e.com"}, None),
        ({"name": "a", "domain": "e.com"}, None),
        ({"name": "a", "value": "1"}, None),
        ({"name": "a", "value": "1", "domain": ""}, None),
        ("not a cookie", None),
    ],
)
def test_cookie_normalisation(raw: Any, expected: dict[str, Any] | None) -> None:
    assert normalise_cookie(raw) == expected


def test_state_normalisation_keeps_origins_verbatim() -> None:
    origin = {"origin": "https://e.com", "localStorage": [{"name": "k", "value": "v"}], "indexedDB": []}
    state = normalise_state({"cookies": [{"name": "a", "value": "1", "domain": "e.com"}, 7], "origins": [origin, 3]})
    assert state == {"cookies": [{"name": "a", "value": "1", "domain": "e.com"}], "origins": [origin]}
    assert normalise_state({"origins": []}) == {"cookies": [], "origins": []}


@pytest.mark.parametrize("raw", [None, [], "x", {}, {"other": 1}, {"cookies": {}}, {"origins": "x"}])
def test_uninterpretable_states_are_refused(raw: Any) -> None:
    with pytest.raises(MalformedRequest):
        normalise_state(raw)


def test_damaged_files_read_as_empty_parts() -> None:
    assert read_jar("junk") == {"cookies": [], "origins": []}
    assert read_jar({"cookies": "x", "origins": [1, {"origin": "o"}]}) == {"cookies": [], "origins": [{"origin": "o"}]}


def test_cookie_domains_are_sorted_distinct_without_leading_dots() -> None:
    jar = {"cookies": [{"domain": ".b.com"}, {"domain": "a.com"}, {"domain": "B.com"}, {"url": "https://x"}]}
    assert cookie_domains(jar) == ("a.com", "b.com")


@pytest.mark.parametrize(
    ("value", "valid"),
    [
        ("3f2b0c1e-0000-4000-8000-000000000000", True),
        ("cloud.export_v1-2", True),
        ("a..b", False),
        ("..", False),
        (".", False),
        ("a/b", False),
        ("a b", False),
        ("", False),
        ("x" * 201, False),
    ],
)
def test_imported_profile_ids(value: str, valid: bool) -> None:
    assert is_valid_profile_id(value) is valid
