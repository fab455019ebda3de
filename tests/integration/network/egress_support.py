"""Real local servers for the egress enforcer tests: an HTTP site, a TCP echo server, a WebSocket echo server."""

from __future__ import annotations

import asyncio
import base64
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route
from websockets.asyncio.server import ServerConnection, serve

WITHIN = 10.0


def site_app(name: str = "site") -> Starlette:
    async def echo(request: Request) -> Response:
        return JSONResponse(
            {
                "name": name,
                "host": request.headers.get("host"),
                "method": request.method,
                "path": request.url.path,
                "query": request.url.query,
                "body": (await request.body()).decode(),
                "connection": request.headers.get("connection"),
                "proxy": request.headers.get("proxy-connection"),
            }
        )

    async def who(_: Request) -> Response:
        return PlainTextResponse(name)

    return Starlette(routes=[Route("/echo", echo, methods=["GET", "POST"]), Route("/who", who)])


@asynccontextmanager
async def tcp_echo_server() -> AsyncIterator[int]:
    async def echo(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while data := await reader.read(65536):
                writer.write(data)
                await writer.drain()
        finally:
            writer.close()

    server = await asyncio.start_server(echo, "127.0.0.1", 0)
    try:
        yield int(server.sockets[0].getsockname()[1])
    finally:
        server.close()
        await server.wait_closed()


@asynccontextmanager
async def websocket_echo_server() -> AsyncIterator[int]:
    async def echo(connection: ServerConnection) -> None:
        async for message in connection:
            text = message if isinstance(message, str) else message.decode()
            await connection.send(f"echo:{text}")

    async with serve(echo, "127.0.0.1", 0) as server:
        yield int(next(iter(server.sockets)).getsockname()[1])


async def exchange(port: int | Path, data: bytes, *, within: float = WITHIN) -> bytes:
    """Send ``data`` to the proxy (TCP port or Unix socket) and read everything until it closes."""
    async with asyncio.timeout(within):
        if isinstance(port, Path):
            reader, writer = await asyncio.open_unix_connection(str(port))
        else:
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
        try:
            writer.write(data)
            await writer.drain()
            return await reader.read()
        finally:
            writer.close()


def masked_text_frame(text: str) -> bytes:
    """One client-to-server WebSocket text frame (short payloads only), masked as RFC 6455 requires."""
    payload = text.encode()
    mask = os.urandom(4)
    return bytes([0x81, 0x80 | len(payload)]) + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload))


def websocket_key() -> str:
    return base64.b64encode(os.urandom(16)).decode()
