"""``/health/details`` never says the sandbox is on before the start-up probe has said so (issue 31)."""

from __future__ import annotations

from pathlib import Path

from fastapi import FastAPI
from starlette.requests import Request

from openbrowse.api.routes.health import _sandbox
from openbrowse.config import Settings


def request_of(app: FastAPI) -> Request:
    return Request({"type": "http", "app": app, "method": "GET", "path": "/health/details", "headers": []})


def test_before_the_probe_answers_the_sandbox_is_unknown_not_enabled(tmp_path: Path) -> None:
    view = _sandbox(request_of(FastAPI()), Settings(OPENBROWSE_HOME=tmp_path))
    assert view.enabled is False
    assert view.model_dump(by_alias=True)["state"] == "unknown"
    assert view.warning is not None and "not been probed" in view.warning


def test_after_the_probe_the_answer_is_the_probes(tmp_path: Path) -> None:
    app = FastAPI()
    app.state.sandbox_problem = "bwrap not installed"
    refused = _sandbox(request_of(app), Settings(OPENBROWSE_HOME=tmp_path))
    assert (refused.enabled, refused.state, refused.problem) == (False, "unavailable", "bwrap not installed")
    assert refused.warning is not None and "refuse to start" in refused.warning
    app.state.sandbox_problem = None
    working = _sandbox(request_of(app), Settings(OPENBROWSE_HOME=tmp_path))
    assert (working.enabled, working.state, working.warning) == (True, "enabled", None)
