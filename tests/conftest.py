"""Shared fixtures: real servers in temp homes, the official SDK as the caller, the fake provider."""

from __future__ import annotations

import os
import tempfile
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path

import pytest
from browser_use_sdk.v3 import AsyncBrowserUse

from openbrowse.bootstrap import prepare_process_environment
from openbrowse.store.target import StoreTarget
from tests.support.ci_gate import fail_if_marked
from tests.support.ordering import slow_files_first
from tests.support.postgres import MISSING as POSTGRES_MISSING, ThrowawayPostgres, remove_orphans, server_bin_dir
from tests.support.server import ServerProcess

INHERITED_UNSANDBOXED = (
    "ALLOW_UNSANDBOXED is set in the environment the tests run in: every server they start would inherit it and run "
    "its slots unsandboxed, so the sandbox and its fail-closed gate would go untested. Unset it (a test that needs "
    "it sets it for its own server)."
)


def pytest_configure(config: pytest.Config) -> None:
    """Refuse to run with an inherited ``ALLOW_UNSANDBOXED``: it would turn the servers' fail-closed gate off."""
    if os.environ.get("ALLOW_UNSANDBOXED"):
        raise pytest.UsageError(INHERITED_UNSANDBOXED)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Slow files first, so the parallel workers end on quick ones (``ordering``)."""
    slow_files_first(config.rootpath, items)


def pytest_runtest_setup(item: pytest.Item) -> None:
    """On the CI machine, a test that would have skipped for a missing tool fails instead (``ci_gate``)."""
    fail_if_marked(item)


# browser-use stays quiet and offline in the test process too (telemetry, version check, cloud sync, logging set-up):
# the server's own switches, set before the first import of it below.
prepare_process_environment()

# browser-use makes a downloads dir in the temp dir when it is imported (its default profile) and never removes
# it; test modules import it in every worker, so the import happens here, inside a temp dir that is then removed.
_temp_before = tempfile.tempdir
with tempfile.TemporaryDirectory(prefix="openbrowse-tests-") as _import_temp:
    tempfile.tempdir = _import_temp
    try:
        import browser_use.browser.session  # noqa: F401
    finally:
        tempfile.tempdir = _temp_before


@pytest.fixture(autouse=True)
def _restore_process_temp_dir() -> Iterator[None]:
    """An app built in-process points ``tempfile.tempdir`` into its data dir (``bootstrap``); a later test in the
    same worker must not inherit a temp dir inside another test's ``tmp_path``."""
    before = tempfile.tempdir
    yield
    tempfile.tempdir = before


StartServer = Callable[..., ServerProcess]


@pytest.fixture
def start_server(tmp_path: Path) -> Iterator[StartServer]:
    """Start ``python -m openbrowse serve`` with extra environment; stopped and checked for leftovers after."""
    servers: list[ServerProcess] = []

    def start(home: Path | None = None, **env: object) -> ServerProcess:
        server = ServerProcess(
            home=home or tmp_path / f"home{len(servers)}",
            env={key: str(value) for key, value in env.items()},
        )
        servers.append(server)
        return server.start()

    yield start
    problems = []
    for server in servers:
        server.stop()
        left = server.leftovers()
        if left:
            problems.append(f"{server.port}: {[p.name() for p in left]}")
            for proc in left:
                proc.kill()
    # only once every server is down: servers sharing a home share its slots' scratch folders under /tmp
    for server in servers:
        if server.temp_leftovers():
            problems.append(f"{server.port}: temp files left: {server.temp_leftovers()}")
    assert not problems, f"processes left behind: {problems}"


@pytest.fixture
async def sdk() -> AsyncIterator[Callable[[ServerProcess], AsyncBrowserUse]]:
    """The official browser-use-sdk v3 client pointed at a server."""
    clients: list[AsyncBrowserUse] = []

    def connect(server: ServerProcess, api_key: str = "local-key") -> AsyncBrowserUse:
        client = AsyncBrowserUse(api_key=api_key, base_url=server.v3, max_retries=0)
        clients.append(client)
        return client

    yield connect
    for client in clients:
        await client.close()


@pytest.fixture(scope="session")
def throwaway_postgres() -> Iterator[ThrowawayPostgres]:
    """One PostgreSQL per test session (per xdist worker), started on first use, removed at the end."""
    bin_dir = server_bin_dir()
    if bin_dir is None:
        pytest.fail(POSTGRES_MISSING)
    remove_orphans(bin_dir)
    server = ThrowawayPostgres(bin_dir)
    try:
        server.start()
        yield server
    finally:
        server.stop()


@pytest.fixture(params=["sqlite", "postgresql"])
def store_target(request: pytest.FixtureRequest, tmp_path: Path) -> StoreTarget:
    """A fresh, empty store on each backend: a SQLite file, or a new database in the throwaway PostgreSQL."""
    if request.param == "sqlite":
        return StoreTarget.sqlite(tmp_path / "store.db")
    server: ThrowawayPostgres = request.getfixturevalue("throwaway_postgres")
    return StoreTarget.parse(server.new_database())
