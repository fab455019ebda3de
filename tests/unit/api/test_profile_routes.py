"""The profiles resource as the OpenAPI document describes it: every method, unique operation ids."""

from __future__ import annotations

from pathlib import Path

from openbrowse.app import create_app
from openbrowse.config import Settings


def test_profile_routes_are_documented_without_duplicate_operation_ids(tmp_path: Path) -> None:
    app = create_app(Settings(OPENBROWSE_HOME=tmp_path))
    paths = app.openapi()["paths"]  # FastAPI warns on duplicate operation ids; warnings are errors here
    assert set(paths["/v3/profiles"]) == {"get", "post"}
    assert set(paths["/v3/profiles/{profile_id}"]) == {"get", "patch", "put", "delete"}
    assert set(paths["/v3/profiles/{profile_id}/storage-state"]) == {"get", "put"}
    operation_ids = [op["operationId"] for methods in paths.values() for op in methods.values()]
    assert len(operation_ids) == len(set(operation_ids))
