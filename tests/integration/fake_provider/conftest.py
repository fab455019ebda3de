"""Fixtures of the fake LLM provider's tests (browser-use is kept quiet and offline by ``tests/conftest.py``)."""

from __future__ import annotations

import asyncio
import gc
from collections.abc import AsyncIterator, Iterator

import pytest

from tests.fakes.llm_server import FakeProvider


@pytest.fixture(autouse=True)
async def _collect_sdk_clients_between_requests() -> AsyncIterator[None]:
    """browser-use builds a new SDK client per call and never closes it. When the cyclic GC collects one while
    the next call is connecting, the client's ``__del__`` close can break that connect (a 5 s ConnectTimeout
    under CPU load). Collect only here, between tests, and let those close tasks finish on the test's loop."""
    gc.disable()
    try:
        yield
    finally:
        gc.enable()
        gc.collect()
        pending = asyncio.all_tasks() - {asyncio.current_task()}
        if pending:
            await asyncio.wait(pending, timeout=2)


@pytest.fixture
def fake() -> Iterator[FakeProvider]:
    with FakeProvider() as provider:
        yield provider
        assert not provider.errors
