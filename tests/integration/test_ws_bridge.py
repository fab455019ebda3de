"""The WebSocket bridge enforces its route's message limit (1009), with a real uvicorn and a real upstream."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import websockets
from starlette.applications import Starlette
from starlette.routing import WebSocketRoute
from starlette.websockets import WebSocket
from websockets.asyncio.server import Server, ServerConnection, serve

from openbrowse.api.routes.live import VNC_MAX_MESSAGE
from openbrowse.api.ws_bridge import CLOSE_TOO_BIG, bridge
from openbrowse.config import Settings
from openbrowse.server import ws_max_size
from tests.support.asgi_thread import ThreadedServer

LIMIT = 1024


async def echo(connection: ServerConnection) -> None:
    async for message in connection:
        await connection.send(message)


@pytest.fixture
async def upstream() -> AsyncIterator[Server]:
    async with serve(echo, "127.0.0.1", 0, max_size=None) as server:
        yield server


async def test_a_message_over_the_route_limit_closes_the_bridge_with_1009(upstream: Server) -> None:
    port = next(iter(upstream.sockets)).getsockname()[1]

    async def limited(websocket: WebSocket) -> None:
        await websocket.accept()
        await bridge(websocket, f"ws://127.0.0.1:{port}", max_message=LIMIT, max_upstream_message=4 * LIMIT)

    with ThreadedServer(Starlette(routes=[WebSocketRoute("/limited", limited)])) as server:
        url = server.url.replace("http", "ws") + "/limited"
        async with websockets.connect(url) as client:
            await client.send(b"x" * LIMIT)
            assert await client.recv() == b"x" * LIMIT
            await client.send("é" * (LIMIT // 2))  # exactly LIMIT bytes as UTF-8
            assert await client.recv() == "é" * (LIMIT // 2)
            await client.send("é" * (LIMIT // 2 + 1))  # within LIMIT characters, over LIMIT bytes
            with pytest.raises(websockets.ConnectionClosed) as closed:
                await client.recv()
        assert closed.value.rcvd is not None and closed.value.rcvd.code == CLOSE_TOO_BIG


def test_route_limits_fit_under_the_server_ceiling(tmp_path: Path) -> None:
    settings = Settings(OPENBROWSE_HOME=tmp_path)
    assert VNC_MAX_MESSAGE == 1 << 20 and settings.CDP_MAX_FRAME_FROM_CLIENT_MB == 64
    assert ws_max_size(settings) == 64 << 20  # was a shared 256 MiB
