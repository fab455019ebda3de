"""Module-scoped parts for end-to-end agent runs: the fake provider, fixture sites and a server using both."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.fakes.llm_server import FakeProvider
from tests.fakes.site import FixtureSites
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
def agent_server(tmp_path_factory: pytest.TempPathFactory, fake: FakeProvider) -> Iterator[ServerProcess]:
    """A server whose OpenAI models use the Responses API and Anthropic models the Messages API, via the fake."""
    env = {**fake.env(), "OPENAI_API_STYLE": "responses", "MAX_CONCURRENT_SESSIONS": "3"}
    process = ServerProcess(home=tmp_path_factory.mktemp("agent-home"), env=env).start()
    yield process
    process.stop()
    assert not process.leftovers(), process.leftovers()
    assert not process.temp_leftovers(), process.temp_leftovers()
