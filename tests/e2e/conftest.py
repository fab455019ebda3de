"""Fixtures shared by the end-to-end modules: the fake provider, fixture sites, a server for agent runs, and clients
and raw browsers of a module's own ``server`` fixture (see ``servers.py``)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.e2e.browser_support import fixture_site
from tests.e2e.servers import agent_env, api_client, raw_browser, running_server
from tests.fakes.llm_server import FakeProvider
from tests.fakes.login_site import LoginSite
from tests.fakes.site import FixtureSites
from tests.support.asgi_thread import ThreadedServer
from tests.support.postgres import TEST_CLUSTER_SECRET, ThrowawayPostgres
from tests.support.server import ServerProcess


@pytest.fixture(scope="module")
def fake() -> Iterator[FakeProvider]:
    with FakeProvider() as provider:
        yield provider


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


@pytest.fixture(scope="module")
def agent_server(tmp_path_factory: pytest.TempPathFactory, fake: FakeProvider) -> Iterator[ServerProcess]:
    """A server whose OpenAI models use the Responses API and Anthropic models the Messages API, via the fake."""
    home = tmp_path_factory.mktemp("agent-home")
    with running_server(home, agent_env(fake), slots=3, check_temp=True) as process:
        yield process


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
