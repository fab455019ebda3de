"""The fail-closed gate (spec §24.2, issue 31): where the sandbox cannot be made, sessions and raw browsers refuse
to start, and ``/health/details`` says why, unless ``ALLOW_UNSANDBOXED=1`` is set.

The sandbox is taken away the way a host without it would be, with nothing the server could mistake for a switch:
the server's ``PATH`` starts with a folder whose ``bwrap`` fails like a kernel that refuses namespaces.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.e2e.servers import agent_env, running_server
from tests.fakes.llm_server import FakeProvider
from tests.support.server import ServerProcess, wait_until

pytestmark = pytest.mark.e2e

REFUSAL = "no permission to create namespaces (a host without the sandbox)"


def without_sandbox(folder: Path) -> dict[str, str]:
    """A ``PATH`` whose ``bwrap`` fails as on a kernel that refuses new namespaces."""
    folder.mkdir(parents=True, exist_ok=True)
    bwrap = folder / "bwrap"
    bwrap.write_text(f'#!/bin/sh\necho "bwrap: {REFUSAL}" >&2\nexit 1\n')
    bwrap.chmod(0o755)
    return {"PATH": f"{folder}:{os.environ.get('PATH', '/usr/bin:/bin')}"}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, fake: FakeProvider) -> Iterator[ServerProcess]:
    home = tmp_path_factory.mktemp("no-sandbox-home")
    with running_server(home, agent_env(fake, **without_sandbox(home / "bin"))) as process:
        yield process


@pytest.fixture
def http(server: ServerProcess) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=server.base_url, timeout=60) as client:
        yield client


def browser_stack_started(server: ServerProcess) -> list[str]:
    return [proc.name() for proc in server.children() if proc.name() in ("Xvfb", "chromium", "chrome")]


def test_health_details_carries_the_warning(http: httpx.Client) -> None:
    sandbox = http.get("/health/details").json()["sandbox"]
    assert sandbox["enabled"] is False and sandbox["state"] == "unavailable"
    assert REFUSAL in sandbox["problem"]
    assert (
        sandbox["warning"] == "Sessions refuse to start until the sandbox is available or ALLOW_UNSANDBOXED=1 is set."
    )


def test_a_raw_browser_refuses_to_start(http: httpx.Client, server: ServerProcess) -> None:
    refused = http.post("/v3/browsers", json={})
    assert refused.status_code == 503, refused.text
    detail = refused.json()["detail"]
    assert (
        detail.startswith("Sessions cannot start: the browser sandbox is unavailable") and "ALLOW_UNSANDBOXED" in detail
    )
    assert browser_stack_started(server) == []


def test_a_session_ends_in_error_saying_why(http: httpx.Client, server: ServerProcess) -> None:
    created = http.post("/v3/sessions", json={"task": "Say hello."})
    assert created.status_code in (200, 201), created.text
    session_id = created.json()["id"]
    seen: dict[str, object] = {}

    def ended() -> bool:
        seen.update(http.get(f"/v3/sessions/{session_id}").json())
        return seen["status"] not in ("created", "running")

    wait_until(ended, 120, what="the session to end")
    assert seen["status"] == "error", seen
    assert "sandbox is unavailable" in str(seen), seen
    assert browser_stack_started(server) == []
