"""A WebSocket bridge: one accepted client socket (served by uvicorn) joined to one loopback upstream.

Used for the live view (noVNC ↔ websockify, binary frames) and for raw browsers' CDP (client ↔ Chromium's
DevTools socket, text frames). Frames are forwarded as they are, text as text and bytes as bytes, with no
size limit on the upstream side (CDP messages reach tens of MB; the client side is bounded by uvicorn's
``ws_max_size``). Either side closing ends both: the two pump tasks are owned here, the survivor is cancelled
and both are awaited before :func:`bridge` returns, so nothing outlives the connection.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Sequence

from starlette.websockets import WebSocket, WebSocketDisconnect, WebSocketDisconnected, WebSocketState
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidHandshake, InvalidURI
from websockets.typing import Subprotocol

__all__ = ["CLOSE_NORMAL", "CLOSE_POLICY", "CLOSE_UNAVAILABLE", "bridge", "close_quietly", "offered_subprotocol"]

logger = logging.getLogger(__name__)
_upstream_logger = logging.getLogger(f"{__name__}.upstream")

CLOSE_NORMAL = 1000
CLOSE_POLICY = 1008  # authentication failed
CLOSE_UNAVAILABLE = 1011  # nothing to connect to (no display, VNC or browser unavailable)

OPEN_TIMEOUT = 10.0
CLOSE_TIMEOUT = 2.0
_UNSENDABLE = {1005, 1006, 1015}  # reserved codes that describe a close but may not be sent in one


def offered_subprotocol(websocket: WebSocket, name: str) -> str | None:
    """``name`` if the client offered it (so the accept can echo it), else None."""
    offered: Sequence[str] = websocket.scope.get("subprotocols") or ()
    return name if name in offered else None


async def close_quietly(websocket: WebSocket, code: int, reason: str = "") -> None:
    """Close the client socket unless either side already has."""
    if websocket.application_state is WebSocketState.DISCONNECTED:
        return
    if websocket.client_state is WebSocketState.DISCONNECTED:
        return
    with contextlib.suppress(WebSocketDisconnect, WebSocketDisconnected, OSError):
        await websocket.close(code=code, reason=reason[:120])


async def bridge(client: WebSocket, upstream_url: str, *, subprotocol: str | None = None) -> None:
    """Join the **accepted** ``client`` to ``upstream_url`` until either side closes, then close both."""
    try:
        upstream = await connect(
            upstream_url,
            subprotocols=[Subprotocol(subprotocol)] if subprotocol else None,
            compression=None,
            proxy=None,
            max_size=None,
            max_queue=64,
            ping_interval=None,
            open_timeout=OPEN_TIMEOUT,
            close_timeout=CLOSE_TIMEOUT,
            user_agent_header=None,
            logger=_upstream_logger,
        )
    except (OSError, TimeoutError, InvalidHandshake, InvalidURI) as exc:
        logger.warning("Upstream %s refused the bridge: %s", upstream_url, exc)
        await close_quietly(client, CLOSE_UNAVAILABLE, "Upstream unavailable")
        return
    code = CLOSE_NORMAL
    try:
        code = await _pump_both(client, upstream)
    finally:
        with contextlib.suppress(Exception):
            await asyncio.shield(upstream.close())
        await close_quietly(client, code)


async def _pump_both(client: WebSocket, upstream: ClientConnection) -> int:
    """Run both directions until one ends; return the close code to give the client."""
    tasks = [
        asyncio.ensure_future(_client_to_upstream(client, upstream)),
        asyncio.ensure_future(_upstream_to_client(upstream, client)),
    ]
    try:
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    received = upstream.close_code
    if received is None:
        return CLOSE_NORMAL
    if received in _UNSENDABLE:
        return CLOSE_NORMAL if received == 1005 else CLOSE_UNAVAILABLE
    return received


async def _client_to_upstream(client: WebSocket, upstream: ClientConnection) -> None:
    try:
        while True:
            message = await client.receive()
            if message["type"] == "websocket.disconnect":
                return
            data = message.get("bytes")
            if data is not None:
                await upstream.send(data)
                continue
            text = message.get("text")
            if text is not None:
                await upstream.send(text)
    except (ConnectionClosed, WebSocketDisconnect, WebSocketDisconnected) as exc:
        logger.debug("Bridge client→upstream ended: %r", exc)


async def _upstream_to_client(upstream: ClientConnection, client: WebSocket) -> None:
    try:
        async for message in upstream:
            if isinstance(message, bytes):
                await client.send_bytes(message)
            else:
                await client.send_text(message)
    except (ConnectionClosed, WebSocketDisconnect, WebSocketDisconnected) as exc:
        logger.debug("Bridge upstream→client ended: %r", exc)
