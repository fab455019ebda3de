"""Fixtures of the network tests: a real HTTP site on loopback."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.integration.network.egress_support import site_app
from tests.support.asgi_thread import ThreadedServer


@pytest.fixture(scope="module")
def site() -> Iterator[ThreadedServer]:
    with ThreadedServer(site_app()) as running:
        yield running
