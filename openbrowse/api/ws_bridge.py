"""A WebSocket bridge: one accepted client socket (served by uvicorn) joined to one loopback upstream.

Used for the live view (noVNC ↔ websockify, binary frames) and for raw browsers' CDP (client ↔ Chromium's
DevTools socket, text frames). Frames are forwarded as they are, text as text and bytes as bytes. Each direction
has its own size limit per route: ``max_message`` for the client's (uvicorn's ``ws_max_size`` is the ceiling over
all routes), ``max_upstream_message`` for upstream's; a frame over either closes that connection alone with 1009.
Nothing is queued without bound (:mod:`openbrowse.api.bridge_limits`): a frame is taken from one side only once
the other side accepted the previous one, and the upstream connection reads at most
``UPSTREAM_QUEUE_FRAMES`` ahead. Credentials and the origin are
checked before a handshake is accepted (:func:`deny_websocket`). Either side closing ends both: the two pump
tasks are owned here, the survivor is cancelled and both are awaited before :func:`bridge` returns, so nothing
outlives the connection.

A route may ``screen`` client messages (raw browsers' CDP: :mod:`openbrowse.api.cdp_filter`): each one is
forwarded as the screen says, possibly rewritten, or answered to the client and dropped. A ``greeting`` is one
call made upstream before the client is heard, its answer kept from the client. A screen that cannot follow the
client's stream raises :class:`CloseConnection` (the live view's RFB reader, :mod:`openbrowse.api.vnc_input`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import Protocol

from starlette.responses import Response
from starlette.websockets import WebSocket, WebSocketDisconnect, WebSocketDisconnected, WebSocketState
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidHandshake, InvalidURI
from websockets.typing import Subprotocol

from openbrowse.api.bridge_limits import UPSTREAM_QUEUE_FRAMES, BridgeFlow
from openbrowse.shielding import run_shielded

__all__ = [
    "CLOSE_NORMAL",
    "CLOSE_POLICY",
    "CLOSE_TOO_BIG",
    "CLOSE_UNAVAILABLE",
    "ClientScreen",
    "CloseConnection",
    "Screened",
    "bridge",
    "bridge_until",
    "close_quietly",
    "deny_websocket",
    "offered_subprotocol",
]

logger = logging.getLogger(__name__)
_upstream_logger = logging.getLogger(f"{__name__}.upstream")

CLOSE_NORMAL = 1000
CLOSE_POLICY = 1008  # authentication failed
CLOSE_TOO_BIG = 1009  # a client message above the route's limit
CLOSE_UNAVAILABLE = 1011  # nothing to connect to (no display, VNC or browser unavailable)

OPEN_TIMEOUT = 10.0
CLOSE_TIMEOUT = 2.0
_UNSENDABLE = {1005, 1006, 1015}  # reserved codes that describe a close but may not be sent in one


class Screened(Protocol):
    """A screen's verdict on one client message: what to send upstream, and what to answer the client."""

    @property
    def forward(self) -> bytes | str | None: ...

    @property
    def reply(self) -> str | None: ...


ClientScreen = Callable[[bytes | str], Screened]


class CloseConnection(Exception):
    """Raised by a screen: end the bridge and close the client with ``code`` (and ``reason``)."""

    def __init__(self, code: int, reason: str = "") -> None:
        super().__init__(reason)
        self.code = code
        self.reason = reason


def offered_subprotocol(websocket: WebSocket, name: str) -> str | None:
    """``name`` if the client offered it (so the accept can echo it), else None."""
    offered: Sequence[str] = websocket.scope.get("subprotocols") or ()
    return name if name in offered else None


async def deny_websocket(websocket: WebSocket, response: Response) -> None:
    """Refuse a handshake **before accepting it**, with an HTTP answer where the server supports one (uvicorn
    does), else with a policy-violation close, which the server turns into a plain 403."""
    if "websocket.http.response" in websocket.scope.get("extensions", {}):
        await websocket.send_denial_response(response)
    else:
        await websocket.close(code=CLOSE_POLICY)


async def close_quietly(websocket: WebSocket, code: int, reason: str = "") -> None:
    """Close the client socket unless either side already has."""
    if websocket.application_state is WebSocketState.DISCONNECTED:
        return
    if websocket.client_state is WebSocketState.DISCONNECTED:
        return
    with contextlib.suppress(WebSocketDisconnect, WebSocketDisconnected, OSError):
        await websocket.close(code=code, reason=reason[:120])


async def bridge(
    client: WebSocket,
    upstream_url: str,
    *,
    max_message: int,
    max_upstream_message: int,
    flow: BridgeFlow | None = None,
    subprotocol: str | None = None,
    screen: ClientScreen | None = None,
    greeting: str | None = None,
) -> None:
    """Join the **accepted** ``client`` to ``upstream_url`` until either side closes, then close both.

    A client message larger than ``max_message`` bytes, or an upstream one larger than ``max_upstream_message``,
    ends the bridge with close code 1009. ``flow`` counts what the bridge holds for the client (``/metrics``).
    ``screen`` judges every client message (after the size check); ``greeting`` is sent upstream first and its
    answer swallowed.
    """
    flow = flow if flow is not None else BridgeFlow("cdp")
    try:
        upstream = await connect(
            upstream_url,
            subprotocols=[Subprotocol(subprotocol)] if subprotocol else None,
            compression=None,
            proxy=None,
            max_size=max_upstream_message,
            max_queue=UPSTREAM_QUEUE_FRAMES,
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
    flow.upstream = upstream
    code, reason = CLOSE_NORMAL, ""
    try:
        if greeting is not None and not await _greet(upstream, greeting):
            code = CLOSE_UNAVAILABLE
            return
        code, reason = await _pump_both(client, upstream, max_message, screen, flow)
    finally:
        flow.upstream = None
        with contextlib.suppress(Exception):
            await run_shielded(upstream.close())
        await close_quietly(client, code, reason)


async def _greet(upstream: ClientConnection, greeting: str) -> bool:
    """Send ``greeting`` and wait for its answer (nothing else was asked yet, so the next message is it)."""
    try:
        await upstream.send(greeting)
        answer = await asyncio.wait_for(upstream.recv(), OPEN_TIMEOUT)
    except (ConnectionClosed, TimeoutError) as exc:
        logger.warning("Upstream did not answer the bridge's greeting: %r", exc)
        return False
    if '"error"' in (answer if isinstance(answer, str) else answer.decode("utf-8", "replace")):
        logger.warning("Upstream refused the bridge's greeting: %.300s", answer)
    return True


async def _pump_both(
    client: WebSocket, upstream: ClientConnection, max_message: int, screen: ClientScreen | None, flow: BridgeFlow
) -> tuple[int, str]:
    """Run both directions until one ends; return the close code (and reason) to give the client."""
    sending = asyncio.Lock()  # both directions may write to the client: a screen's answer and upstream's frames
    outbound = asyncio.ensure_future(_client_to_upstream(client, upstream, max_message, screen, sending))
    tasks = [outbound, asyncio.ensure_future(_upstream_to_client(upstream, client, sending, flow))]
    try:
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    finished = outbound.done() and not outbound.cancelled() and outbound.exception() is None
    if finished and (refusal := outbound.result()) is not None:
        return refusal
    sent = upstream.protocol.close_sent
    if sent is not None and sent.code == CLOSE_TOO_BIG:  # websockets refused an upstream frame over max_size
        logger.info("Closed a bridge: an upstream message exceeded the route's limit")
        return CLOSE_TOO_BIG, "A message from the browser side exceeded this server's frame limit"
    received = upstream.close_code
    if received is None:
        return CLOSE_NORMAL, ""
    if received in _UNSENDABLE:
        return (CLOSE_NORMAL if received == 1005 else CLOSE_UNAVAILABLE), ""
    return received, ""


def _too_big(message: bytes | str, limit: int) -> bool:
    if isinstance(message, bytes) or len(message) > limit:
        return len(message) > limit
    return len(message) * 4 > limit and len(message.encode("utf-8")) > limit


async def _client_to_upstream(
    client: WebSocket, upstream: ClientConnection, max_message: int, screen: ClientScreen | None, sending: asyncio.Lock
) -> tuple[int, str] | None:
    """Forward client frames; return the close code when the bridge refuses one (1009: too big for this route;
    a screen's :class:`CloseConnection`), None when the client leaves."""
    try:
        while True:
            message = await client.receive()
            if message["type"] == "websocket.disconnect":
                return None
            payload: bytes | str | None = message.get("bytes")
            if payload is None:
                payload = message.get("text")
            if payload is None:
                continue
            if _too_big(payload, max_message):
                logger.info("Closed a bridge: a client message exceeded %d bytes", max_message)
                return CLOSE_TOO_BIG, f"A client message exceeded this route's limit of {max_message} bytes"
            if screen is not None:
                try:
                    verdict = screen(payload)
                except CloseConnection as refusal:
                    logger.info("Closed a bridge: %s", refusal.reason)
                    return refusal.code, refusal.reason
                if verdict.reply is not None:
                    async with sending:
                        await client.send_text(verdict.reply)
                payload = verdict.forward
                if payload is None:
                    continue
            await upstream.send(payload)
    except (ConnectionClosed, WebSocketDisconnect, WebSocketDisconnected) as exc:
        logger.debug("Bridge client→upstream ended: %r", exc)
    return None


async def _upstream_to_client(
    upstream: ClientConnection, client: WebSocket, sending: asyncio.Lock, flow: BridgeFlow
) -> None:
    """Forward upstream frames one at a time: the next is taken only once the client's transport took this one
    (uvicorn's send waits while the client's write buffer is over its high-water mark)."""
    try:
        async for message in upstream:
            flow.held_frames += 1
            flow.held_bytes += len(message)
            try:
                async with sending:
                    if isinstance(message, bytes):
                        await client.send_bytes(message)
                    else:
                        await client.send_text(message)
            finally:
                flow.held_frames -= 1
                flow.held_bytes -= len(message)
    except (ConnectionClosed, WebSocketDisconnect, WebSocketDisconnected) as exc:
        logger.debug("Bridge upstream→client ended: %r", exc)


async def bridge_until(work: Awaitable[None], ended: asyncio.Event | None) -> None:
    """Run a :func:`bridge` until it ends by itself or ``ended`` is set (its browser was stopped: the bridge is
    cancelled, which closes both sides)."""
    if ended is None:
        await work
        return
    job = asyncio.ensure_future(work)
    cut = asyncio.ensure_future(ended.wait())
    try:
        await asyncio.wait({job, cut}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in (job, cut):
            task.cancel()
        await asyncio.gather(job, cut, return_exceptions=True)
