"""The session unit tests marked ``virtual_time`` run on a loop whose clock jumps to its next timer."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping

import pytest

from tests.support.virtual_time import loop_factories


def pytest_asyncio_loop_factories(
    config: pytest.Config, item: pytest.Item
) -> Mapping[str, Callable[[], asyncio.AbstractEventLoop]]:
    return loop_factories(item)
