"""The store's failures are typed (spec §26.1): a database that is down at start-up is one sentence and exit
status 2; while it is away ``/health`` says so with a 503 and API calls get a 503 with one sentence; when it comes
back, the same server answers again (the lost connections are replaced)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.e2e.agent_support import agent_steps, create, token, wait_until_status
from tests.e2e.servers import agent_env, running_server
from tests.fakes.llm_script import Gate, done, navigate, structured
from tests.fakes.llm_server import FakeProvider
from tests.fakes.site import FixtureSites
from tests.support.display import needs_display
from tests.support.postgres import TEST_CLUSTER_SECRET, ThrowawayPostgres, server_bin_dir
from tests.support.server import ServerProcess, free_port
from tests.support.waiting import wait_for

pytestmark = [pytest.mark.e2e]


def serve(home: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "openbrowse", "serve", "--port", "0"],
        env={"OPENBROWSE_HOME": str(home), "PATH": "/usr/bin:/bin", **env},
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_a_database_down_at_start_is_one_sentence_and_exit_2(tmp_path: Path) -> None:
    result = serve(
        tmp_path,
        DATABASE_URL=f"postgresql://openbrowse@127.0.0.1:{free_port()}/openbrowse",
        CLUSTER_SECRET=TEST_CLUSTER_SECRET,
    )
    assert result.returncode == 2, result.stderr
    assert "The database (PostgreSQL at 127.0.0.1:" in result.stderr and "cannot be reached" in result.stderr
    assert "Traceback" not in result.stderr


def test_postgresql_without_a_cluster_secret_is_one_sentence_and_exit_2(tmp_path: Path) -> None:
    result = serve(tmp_path, DATABASE_URL=f"postgresql://openbrowse@127.0.0.1:{free_port()}/openbrowse")
    assert result.returncode == 2, result.stderr
    assert "so CLUSTER_SECRET must be set" in result.stderr and "Traceback" not in result.stderr


def test_a_database_url_of_another_kind_is_one_sentence_and_exit_2(tmp_path: Path) -> None:
    result = serve(tmp_path, DATABASE_URL="mysql://root@127.0.0.1/openbrowse")
    assert result.returncode == 2, result.stderr
    assert "neither postgresql:// nor sqlite:///" in result.stderr and "Traceback" not in result.stderr


@pytest.fixture(scope="module")
def own_postgres() -> Iterator[ThrowawayPostgres]:
    """A PostgreSQL of this module's own: its tests stop and start it."""
    bin_dir = server_bin_dir()
    assert bin_dir is not None
    postgres = ThrowawayPostgres(bin_dir)
    try:
        postgres.start()
        yield postgres
    finally:
        postgres.stop()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, own_postgres: ThrowawayPostgres) -> Iterator[ServerProcess]:
    env = {
        "DATABASE_URL": own_postgres.new_database(),
        "DATABASE_POOL_SIZE": "3",
        "CLUSTER_SECRET": TEST_CLUSTER_SECRET,
    }
    with running_server(tmp_path_factory.mktemp("store-failures-home"), env) as process:
        yield process


def test_health_reports_the_database_and_a_lost_one_is_a_503(
    server: ServerProcess, own_postgres: ThrowawayPostgres
) -> None:
    with httpx.Client(base_url=server.base_url, timeout=60) as http:
        assert http.get("/health").json() == {"status": "ok", "database": "ok"}
        details = http.get("/health/details").json()
        assert details["database"] == {"kind": "postgresql", "reachable": True}
        created = http.post("/v3/profiles", json={"name": "kept"})
        assert created.status_code == 201, created.text
        own_postgres.pause()
        try:
            health = http.get("/health")
            assert health.status_code == 503 and health.json() == {"status": "degraded", "database": "unreachable"}
            assert http.get("/health/details").json()["database"] == {"kind": "postgresql", "reachable": False}
            refused = http.get(f"/v3/profiles/{created.json()['id']}")
            assert refused.status_code == 503
            assert refused.json()["detail"].startswith("The database cannot be reached")
        finally:
            own_postgres.resume()
        assert http.get("/health").json() == {"status": "ok", "database": "ok"}
        assert http.get(f"/v3/profiles/{created.json()['id']}").json()["name"] == "kept"


@needs_display
@pytest.mark.display
@pytest.mark.timeout(420)
def test_a_run_whose_database_goes_away_ends_typed_once_it_is_back(
    tmp_path_factory: pytest.TempPathFactory, own_postgres: ThrowawayPostgres, fake: FakeProvider, site: FixtureSites
) -> None:
    marker, gate = token("STORE"), Gate()
    fake.script(
        marker,
        [navigate(f"{site.url}/"), structured(navigate(f"{site.url}/form"), gate=gate), done("Both pages seen.")],
        when=agent_steps,
    )
    env = agent_env(fake, DATABASE_URL=own_postgres.new_database(), CLUSTER_SECRET=TEST_CLUSTER_SECRET)
    with running_server(tmp_path_factory.mktemp("store-lost-mid-run"), env) as server:
        session_id = create(server, task=f"{marker} Look at {site.url}/ and then the form.")["id"]
        assert gate.wait_entered(60), "the run's second step never came"
        own_postgres.pause()
        try:
            gate.open()  # the step's result cannot be written: the store retries, then gives up
            wait_for(
                lambda: f"Run of session {session_id} failed" in server.log(),
                180,
                what="the run to give up on the database",
            )
        finally:
            own_postgres.resume()
        ended = wait_until_status(server, session_id, {"error"}, timeout=120)
        assert ended["failureKind"] == "store_unavailable", ended
        assert ended["lastStepSummary"].startswith("The database was lost mid-run")
        assert ended["isTaskSuccessful"] is False
