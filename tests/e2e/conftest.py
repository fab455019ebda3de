"""Fixtures shared by the end-to-end modules: the fake provider, fixture sites, a server for agent runs, and clients
and raw browsers of a module's own ``server`` fixture (see ``servers.py``).

A server takes several seconds to start (its imports, browser-use's above all), so the agent server is one per test
process (per xdist worker), shared by the modules that use it: each of them starts on a fake provider emptied for
it and leaves no session open behind it (``agent_server``). Its check that nothing was left running or in its temp
dir comes when it stops, at the end of the process."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.e2e.browser_support import fixture_site
from tests.e2e.servers import SharedServers, agent_env, api_client, end_open_work, raw_browser, running_server
from tests.fakes.llm_server import FakeProvider
from tests.fakes.login_site import LoginSite
from tests.fakes.site import FixtureSites
from tests.support.asgi_thread import ThreadedServer
from tests.support.postgres import TEST_CLUSTER_SECRET, ThrowawayPostgres
from tests.support.server import ServerProcess, outlives_modules


@pytest.fixture(scope="session")
def fake_provider() -> Iterator[FakeProvider]:
    """The test process's fake provider: the shared agent server's models point at it."""
    with FakeProvider() as provider:
        yield provider


@pytest.fixture(scope="module")
def fake(fake_provider: FakeProvider) -> FakeProvider:
    """The fake provider as a module finds a new one: no scripts, no recorded requests, the built-in default (the
    modules of one process run one after another, and each module's tasks carry markers of their own)."""
    fake_provider.reset()
    return fake_provider


@pytest.fixture(scope="module")
def site() -> Iterator[FixtureSites]:
    with FixtureSites() as sites:
        yield sites


@pytest.fixture(scope="module")
def login() -> Iterator[LoginSite]:
    """The login site of the profile tests: it stores a cookie, a localStorage and a sessionStorage value."""
    with LoginSite() as served:
        yield served


@pytest.fixture(scope="module")
def pages() -> Iterator[ThreadedServer]:
    """The small local site of ``browser_support.fixture_site`` (a colour page, a text page, an iframe host)."""
    with fixture_site() as served:
        yield served


@pytest.fixture(scope="session")
def shared_agent_server(
    tmp_path_factory: pytest.TempPathFactory, fake_provider: FakeProvider
) -> Iterator[ServerProcess]:
    """The process's agent server (see ``agent_server``), stopped at the end with nothing left running and nothing
    left in its temp dir."""
    home = tmp_path_factory.mktemp("agent-home")
    with running_server(home, agent_env(fake_provider), slots=3, check_temp=True) as process:
        yield outlives_modules(process)


@pytest.fixture(scope="module")
def agent_server(shared_agent_server: ServerProcess, fake: FakeProvider) -> Iterator[ServerProcess]:
    """A server whose OpenAI models use the Responses API and Anthropic models the Messages API, via the fake, on
    three slots; shared by the modules of this process, so after a module every session it left open is stopped
    (its slots free, no turn running into the next module)."""
    assert shared_agent_server.process is not None and shared_agent_server.process.poll() is None, (
        f"the shared agent server exited:\n{shared_agent_server.log()[-3000:]}"
    )
    yield shared_agent_server
    end_open_work(shared_agent_server)


@pytest.fixture(scope="session")
def shared_servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SharedServers]:
    """The servers modules share by their settings (``server_fixture(..., shared=True)``), one per settings."""
    servers = SharedServers(tmp_path_factory)
    try:
        yield servers
    finally:
        servers.stop_all()


@pytest.fixture
def http(server: ServerProcess) -> Iterator[httpx.Client]:
    """A client of the module's ``server`` that sends its API key."""
    with api_client(server) as client:
        yield client


@pytest.fixture
def browser(http: httpx.Client) -> Iterator[dict[str, Any]]:
    """A raw browser on the module's ``server``, stopped after the test."""
    with raw_browser(http) as created:
        yield created


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def store_env(request: pytest.FixtureRequest) -> dict[str, str]:
    """The settings of a server's store, once per backend (spec §26.1): none for SQLite, the default, and a fresh
    database in the throwaway PostgreSQL for the other. A module's ``server`` fixture that takes it runs all its
    tests on both."""
    if request.param == "sqlite":
        return {}
    postgres: ThrowawayPostgres = request.getfixturevalue("throwaway_postgres")
    return {"DATABASE_URL": postgres.new_database(), "CLUSTER_SECRET": TEST_CLUSTER_SECRET}
