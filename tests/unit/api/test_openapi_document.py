"""The published OpenAPI declares the errors each route can answer, with the bodies actually sent (spec §2.3)."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

import pytest

from openbrowse.app import create_app
from openbrowse.config import Settings


@pytest.fixture(scope="module")
def document(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    home: Path = tmp_path_factory.mktemp("openapi-home")
    with pytest.MonkeyPatch.context() as patch:  # create_app prepares the process: undo it for the other tests
        patch.setattr(os, "environ", os.environ.copy())
        patch.setattr(tempfile, "tempdir", tempfile.tempdir)
        return create_app(Settings(OPENBROWSE_HOME=home)).openapi()


def operations(document: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    return [
        (method.upper(), path, operation)
        for path, methods in document["paths"].items()
        for method, operation in methods.items()
    ]


def test_every_route_declares_the_host_and_origin_refusals(document: dict[str, Any]) -> None:
    for method, path, operation in operations(document):
        for status in ("400", "403"):
            assert status in operation["responses"], f"{method} {path} {status}"


def test_authenticated_routes_declare_401_and_429_and_id_routes_404(document: dict[str, Any]) -> None:
    for method, path, operation in operations(document):
        responses = operation["responses"]
        if path.startswith(("/v3/", "/vnc/")) or path == "/health/details":
            assert {"401", "429"} <= responses.keys(), f"{method} {path}"
            assert "Retry-After" in responses["429"]["headers"]
        creates_when_new = method == "PUT" and path.endswith("/storage-state")  # spec §4.9: never a 404
        if "{" in path and not creates_when_new:
            assert "404" in responses, f"{method} {path}"


def test_error_bodies_are_json_and_422_is_either_shape(document: dict[str, Any]) -> None:
    schemas = document["components"]["schemas"]
    assert "HTTPValidationError" not in schemas  # FastAPI's list alone would hide the one-sentence refusals
    unprocessable = schemas["Unprocessable"]["anyOf"]
    assert {branch["$ref"].rsplit("/", 1)[1] for branch in unprocessable} == {"ValidationErrors", "ErrorDetail"}
    assert schemas["ErrorDetail"]["required"] == ["detail"]
    for method, path, operation in operations(document):
        for status, response in operation["responses"].items():
            if status[0] in "45":
                assert list(response["content"]) == ["application/json"], f"{method} {path} {status}"
        if "422" in operation["responses"]:
            ref = operation["responses"]["422"]["content"]["application/json"]["schema"]["$ref"]
            assert ref.endswith("/Unprocessable"), f"{method} {path}"


def test_credentials_and_hand_read_bodies_are_published(document: dict[str, Any]) -> None:
    assert {"apiKeyBearer", "apiKeyHeader", "dashboardBasic", "resourceToken"} <= set(
        document["components"]["securitySchemes"]
    )
    for method, path, operation in operations(document):
        if "401" in operation["responses"]:
            assert {"apiKeyBearer", "apiKeyHeader"} <= {next(iter(s)) for s in operation["security"]}, path
        if method in {"POST", "PATCH"}:
            assert "requestBody" in operation, f"{method} {path}"
    stop = document["paths"]["/v3/sessions/{session_id}/stop"]["post"]["requestBody"]
    assert stop["required"] is False
    assert "strategy" in stop["content"]["application/json"]["schema"]["properties"]
