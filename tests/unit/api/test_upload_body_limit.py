"""Only ``PUT /v3/{sessions|browsers}/{id}/uploads/{name}`` escapes the 1 MiB body bound (spec §22.2, §25.1)."""

from __future__ import annotations

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.routing import Route
from starlette.testclient import TestClient

from openbrowse.api.body_limit import BodyLimit

TWO_MIB = b"x" * (2 << 20)


async def echo_size(request: Request) -> PlainTextResponse:
    return PlainTextResponse(str(len(await request.body())))


def client() -> TestClient:
    app = Starlette(routes=[Route("/{path:path}", echo_size, methods=["PUT", "POST"])])
    app.add_middleware(BodyLimit)
    return TestClient(app)


@pytest.mark.parametrize("path", ["/v3/sessions/abc/uploads/cv.pdf", "/v3/browsers/abc/uploads/a b.bin"])
def test_upload_paths_take_bodies_over_one_mib(path: str) -> None:
    answer = client().put(path, content=TWO_MIB)
    assert answer.status_code == 200 and answer.text == str(len(TWO_MIB))


@pytest.mark.parametrize(
    "path",
    [
        "/v3/sessions",
        "/v3/sessions/abc/uploads",
        "/v3/sessions/abc/uploads/a/b",
        "/v3/profiles/abc/uploads/a",
        "/x/v3/sessions/abc/uploads/a",
    ],
)
def test_every_other_path_keeps_the_bound(path: str) -> None:
    answer = client().put(path, content=TWO_MIB)
    assert answer.status_code == 413
    assert answer.json() == {"detail": "The request body is larger than the limit of 1 MiB."}
