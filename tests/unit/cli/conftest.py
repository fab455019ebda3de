"""Fixtures for the CLI's tests: the control API stand-in on a real port, and ``openbrowse browser …`` in-process."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from click.testing import CliRunner, Result
from starlette.applications import Starlette
from starlette.routing import Route

from openbrowse.__main__ import cli
from tests.support.asgi_thread import ThreadedServer
from tests.unit.cli.control_stand_in import ControlStandIn, Openbrowse


@pytest.fixture(scope="module")
def server() -> Iterator[tuple[ControlStandIn, str]]:
    stand_in = ControlStandIn()
    app = Starlette(routes=[Route("/{path:path}", stand_in.handle, methods=["GET", "POST", "DELETE"])])
    with ThreadedServer(app) as running:
        yield stand_in, running.url


@pytest.fixture
def stand_in(server: tuple[ControlStandIn, str]) -> ControlStandIn:
    server[0].requests.clear()
    server[0].answers.clear()
    return server[0]


@pytest.fixture
def openbrowse(server: tuple[ControlStandIn, str]) -> Openbrowse:
    def run(*args: str, api_key: str | None = None, input: str | None = None) -> Result:
        env = {"OPENBROWSE_URL": server[1], "OPENBROWSE_API_KEY": api_key, "COLUMNS": "200", "NO_COLOR": "1"}
        return CliRunner().invoke(cli, ["browser", *args], env=env, input=input)

    return run
