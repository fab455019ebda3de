"""Every JSON body goes through ``api/body.py`` and its number rule (spec §25.1).

No route may declare a FastAPI body model: FastAPI's own parsing would turn a 5,000-digit integer into a 500
and bypass the rule. The rule itself is checked here on the parser; ``tests/e2e/test_bounds.py`` checks it on
the wire for every route that takes a body.
"""

from __future__ import annotations

import math
import os
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path

import pytest
from fastapi.routing import APIRoute
from starlette.routing import BaseRoute

from openbrowse.api.body import MAX_SAFE_INTEGER, loads
from openbrowse.app import create_app
from openbrowse.config import Settings
from openbrowse.errors import MalformedRequest


def api_routes(routes: Iterable[BaseRoute]) -> Iterator[APIRoute]:
    """Every API route, also inside included routers (FastAPI keeps those as a route that holds the router)."""
    for route in routes:
        if isinstance(route, APIRoute):
            yield route
        included = getattr(route, "original_router", None)
        if included is not None:
            yield from api_routes(included.routes)


def test_no_route_lets_fastapi_parse_a_body(tmp_path: Path) -> None:
    with pytest.MonkeyPatch.context() as patch:  # create_app prepares the process: undo it for the other tests
        patch.setattr(os, "environ", os.environ.copy())
        patch.setattr(tempfile, "tempdir", tempfile.tempdir)
        app = create_app(Settings(OPENBROWSE_HOME=tmp_path))
    routes = list(api_routes(app.routes))
    assert len(routes) > 20
    parsed_by_fastapi = [route.path for route in routes if route.body_field is not None]
    assert parsed_by_fastapi == []


@pytest.mark.parametrize(
    "text",
    [
        str(MAX_SAFE_INTEGER + 1),
        str(-MAX_SAFE_INTEGER - 1),
        "1" * 33,
        "1" * 5000,
        "1e400",
        "-1e400",
        "1e-400",
        "0.000000000000000000000000000001e-300",
        "0." + "1" * 40,
        "NaN",
        "Infinity",
        "-Infinity",
        '{"a": [1, {"b": 123456789012345678901234567890123}]}',
    ],
)
def test_numbers_json_cannot_carry_exactly_are_malformed(text: str) -> None:
    with pytest.raises(MalformedRequest) as refused:
        loads(text)
    assert refused.value.message.endswith(".") and len(refused.value.message) < 200


@pytest.mark.parametrize(
    ("text", "value"),
    [
        (str(MAX_SAFE_INTEGER), MAX_SAFE_INTEGER),
        (str(-MAX_SAFE_INTEGER), -MAX_SAFE_INTEGER),
        ("0", 0),
        ("-0.0", 0.0),
        ("0e10", 0.0),
        ("1.7976931348623157e308", 1.7976931348623157e308),
        ("5e-324", 5e-324),
        ("0.1", 0.1),
        ("12.50", 12.5),
    ],
)
def test_ordinary_numbers_pass(text: str, value: float) -> None:
    parsed = loads(text)
    assert parsed == value and not (isinstance(parsed, float) and math.isnan(parsed))
