"""Pure rules of the control API's logs: header redaction and the reference client's URL patterns."""

from __future__ import annotations

import pytest

from openbrowse.control.observe import url_matches
from openbrowse.control.page_log import REDACTED, is_secret_header, redact_headers


@pytest.mark.parametrize(
    "name",
    [
        "Authorization",
        "cookie",
        "Proxy-Authorization",
        "set-cookie",
        "X-Api-Key",
        "x-browser-use-api-key",
        "X-Auth-Token",
        "x-client-secret",
        "X_API_TOKEN",
    ],
)
def test_secret_headers_are_recognised(name: str) -> None:
    assert is_secret_header(name)


@pytest.mark.parametrize("name", ["accept", "content-type", "x-requested-with", "user-agent", "keep-alive", "x-debug"])
def test_plain_headers_are_kept(name: str) -> None:
    assert not is_secret_header(name)


def test_redact_headers_replaces_only_secret_values() -> None:
    headers = {"authorization": "Bearer abc", "x-api-key": "k", "accept": "text/html", "cookie": "a=b"}
    assert redact_headers(headers) == {
        "authorization": REDACTED,
        "x-api-key": REDACTED,
        "accept": "text/html",
        "cookie": REDACTED,
    }


def test_redact_headers_clips_long_values() -> None:
    assert len(redact_headers({"accept": "x" * 10_000})["accept"]) == 2048


@pytest.mark.parametrize(
    ("pattern", "url", "expected"),
    [
        ("https://a.test/api/x", "https://a.test/api/x", True),
        ("*", "https://a.test/anything", True),
        ("**/api/*", "https://a.test/v1/api/data", True),
        ("**/api/*", "https://a.test/v1/api/data/more", False),
        ("**/api/**", "https://a.test/v1/api/data/more", True),
        ("https://a.test/*.json", "https://a.test/data.json", True),
        ("https://a.test/*.json", "https://a.test/dir/data.json", False),
        ("api/data", "https://a.test/v1/api/data?x=1", True),
        ("api/other", "https://a.test/v1/api/data", False),
        ("  ", "https://a.test/", False),
        ("https://a.test/a+b(1).txt", "https://a.test/a+b(1).txt", True),
        ("**/a+b(*).txt", "https://a.test/a+b(1).txt", True),
    ],
)
def test_url_patterns(pattern: str, url: str, expected: bool) -> None:
    assert url_matches(pattern, url) is expected
