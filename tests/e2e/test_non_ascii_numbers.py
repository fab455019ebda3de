"""A number in a URL written with any digits but 0-9 is a 4xx that says why, never a 500 (issue 31).

``int()`` and ``str.isdigit()`` take every Unicode digit: ``"²".isdigit()`` is true and ``int("²")`` raises, while
``int("٣")`` is 3. Each route that reads a number from a URL is called with a superscript two, an Arabic-Indic
three and a full-width one, on a real server.
"""

from __future__ import annotations

from collections.abc import Iterator
from urllib.parse import quote

import httpx
import pytest

from tests.e2e.servers import server_fixture
from tests.support.server import ServerProcess

pytestmark = pytest.mark.e2e

NON_ASCII_DIGITS = ["²", "٣", "１"]
ROUTES = [
    "/v3/sessions?page={n}",
    "/v3/sessions?page_size={n}",
    "/v3/browsers?pageNumber={n}",
    "/v3/browsers?pageSize={n}",
    "/v3/profiles?page={n}",
    "/v3/profiles?pageSize={n}",
    "/v3/sessions/{session}/messages?limit={n}",
    "/v3/sessions/{session}/downloads?limit={n}",
    "/v3/browsers/{session}/downloads?limit={n}",
    "/v3/sessions/{session}/files/downloads/report.txt?expires={n}&sig=00",
    "/v3/browsers/{session}/files/recordings/browser-1700000000000.mp4?expires={n}&sig=00",
    "/v3/sessions/{session}/files/downloads/report.txt?expires=17{n}&sig=00",
    "/?page={n}",
]


server = server_fixture()


@pytest.fixture(scope="module")
def http(server: ServerProcess) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=server.base_url, timeout=30) as client:
        yield client


@pytest.fixture(scope="module")
def session_id(http: httpx.Client) -> str:
    created = http.post("/v3/sessions", json={})
    assert created.status_code in (200, 201), created.text
    return str(created.json()["id"])


@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize("digit", NON_ASCII_DIGITS)
def test_a_number_in_other_digits_is_a_4xx_with_a_sentence(
    http: httpx.Client, session_id: str, route: str, digit: str
) -> None:
    answer = http.get(route.format(n=quote(digit), session=session_id), headers={"Accept": "application/json"})
    assert 400 <= answer.status_code < 500, (route, digit, answer.status_code, answer.text[:300])
    detail = answer.json()["detail"]
    assert detail and (isinstance(detail, list) or detail.rstrip().endswith(".")), detail


def test_a_signed_link_with_other_digits_names_the_bad_value(http: httpx.Client, session_id: str) -> None:
    answer = http.get(f"/v3/sessions/{session_id}/files/downloads/report.txt?expires=%C2%B2&sig=00")
    assert answer.status_code == 400
    assert answer.json()["detail"] == "The link's expires must be a whole number written with the digits 0-9."
