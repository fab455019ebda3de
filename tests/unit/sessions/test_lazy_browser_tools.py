"""The MCP browser tools' holder builds nothing until asked, closes cleanly when never asked, and refuses to
build once the app shut down."""

from __future__ import annotations

from typing import Any, cast

import pytest

from openbrowse.sessions.lazy_browser_tools import LazyBrowserTools


def holder() -> LazyBrowserTools:
    unused = cast("Any", None)  # the backend's parts are read only when it is built
    return LazyBrowserTools(unused, unused, unused)


async def test_a_holder_never_asked_builds_nothing_and_closes() -> None:
    async with holder() as tools:
        assert tools.loaded is None
    assert tools.loaded is None


async def test_no_backend_is_built_after_shutdown() -> None:
    tools = holder()
    async with tools:
        pass
    with pytest.raises(RuntimeError, match="shutting down"):
        await tools.get()
    assert tools.loaded is None
