"""``sensitiveData`` patterns, the flat form's binding to the task's start URL, and origin matching (spec §25.3)."""

from __future__ import annotations

import pytest

from openbrowse.domain.secrets import normalize_stored, parse_pattern, scope_secrets, secret_values, secrets_for_url
from openbrowse.errors import InvalidRequest


@pytest.mark.parametrize(
    ("pattern", "url", "matches"),
    [
        ("https://*.example.com", "https://example.com/login", True),
        ("https://*.example.com", "https://a.b.example.com/", True),
        ("https://*.example.com", "https://evil-example.com/", False),
        ("https://*.example.com", "https://example.com.evil.test/", False),
        ("https://*.example.com", "http://example.com/", False),
        ("example.com", "https://example.com/", True),
        ("example.com", "http://example.com/", False),
        ("*://example.com", "http://example.com/", True),
        ("http*://example.com", "https://example.com/", True),
        ("http://127.0.0.1:8000", "http://127.0.0.1:8000/a", True),
        ("http://127.0.0.1:8000", "http://127.0.0.1:8001/a", False),
        ("https://example.com:443", "https://example.com/", True),
        ("https://example.com", "about:blank", False),
        ("https://example.com", "data:text/html,https://example.com", False),
        ("https://example.com", "https://user@evil.test/?https://example.com", False),
    ],
)
def test_a_pattern_matches_only_its_origins(pattern: str, url: str, matches: bool) -> None:
    assert parse_pattern(pattern).matches(url) is matches


@pytest.mark.parametrize(
    "pattern", ["https://", "ftp://example.com", "https://*", "https://a.com/path", "https://exa mple.com", "*", ""]
)
def test_a_bad_pattern_is_refused_in_one_sentence(pattern: str) -> None:
    with pytest.raises(InvalidRequest) as refused:
        scope_secrets({pattern: {"pw": "x"}}, None)
    assert refused.value.message.count(". ") == 0 and refused.value.message.endswith(".")


def test_the_flat_form_is_bound_to_the_origin_of_the_tasks_start_url() -> None:
    scoped = scope_secrets({"pw": "hunter2"}, "Log in at https://Bank.example.com/login, then check.")
    assert scoped == {"https://bank.example.com": {"pw": "hunter2"}}
    assert secrets_for_url(scoped, "https://bank.example.com/account") == {"pw": "hunter2"}
    assert secrets_for_url(scoped, "https://evil.example.com/") == {}


def test_the_flat_form_without_a_start_url_is_refused() -> None:
    with pytest.raises(InvalidRequest, match="Flat sensitiveData needs a task that starts from a URL"):
        scope_secrets({"pw": "hunter2"}, "Log in to my bank.")


def test_both_forms_mix_and_values_are_checked() -> None:
    scoped = scope_secrets({"https://*.a.test/": {"user": "u"}, "pw": "p"}, "go to http://b.test:81/x")
    assert scoped == {"https://*.a.test": {"user": "u"}, "http://b.test:81": {"pw": "p"}}
    assert dict(secret_values(scoped)) == {"u": "user", "p": "pw"}
    for bad in ({"https://a.test": {"pw": ""}}, {"https://a.test": {"bad name": "x"}}, {"https://a.test": {"pw": 5}}):
        with pytest.raises(InvalidRequest):
            scope_secrets(bad, None)


def test_a_legacy_flat_row_is_scoped_or_dropped() -> None:
    assert normalize_stored({"pw": "x"}, "open https://a.test") == {"https://a.test": {"pw": "x"}}
    assert normalize_stored({"pw": "x"}, "no url") is None
    assert normalize_stored({"https://a.test": {"pw": "x"}}, None) == {"https://a.test": {"pw": "x"}}
