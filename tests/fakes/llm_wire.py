"""Sending a rendered reply over the fake LLM provider's connection: chunk by chunk, paced, or cut off.

Faults need the raw TCP transport, which ASGI hides: :func:`with_transport` stores uvicorn's transport in the
scope so :func:`abort_connection` can reset the connection without writing a byte.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import TYPE_CHECKING, Any

from starlette.responses import Response

if TYPE_CHECKING:
    from collections.abc import Awaitable

    from starlette.types import ASGIApp, Receive, Scope, Send

    from tests.fakes.llm_outcome import Rendered

_TRANSPORT_KEY = "fake_llm.transport"


def with_transport(app: ASGIApp) -> ASGIApp:
    """Wrap ``app`` so each HTTP scope carries the connection's transport (uvicorn's h11 protocol)."""

    async def asgi(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            owner = getattr(send, "__self__", None)
            scope[_TRANSPORT_KEY] = getattr(owner, "transport", None)
        await app(scope, receive, send)

    return asgi


class WireResponse(Response):
    """Sends a :class:`Rendered` chunk by chunk; may pause between chunks or abort the connection mid-way."""

    def __init__(self, rendered: Rendered, closing: asyncio.Event) -> None:
        self.rendered = rendered
        self.closing = closing
        self.status_code = rendered.status
        self.background = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        rendered = self.rendered
        headers = list(rendered.headers)
        if len(rendered.chunks) == 1 and not any(k == "content-length" for k, _ in headers):
            headers.append(("content-length", str(len(rendered.chunks[0]))))
        start = {"type": "http.response.start", "status": rendered.status, "headers": _encode(headers)}
        await send(start)
        for number, chunk in enumerate(rendered.chunks):
            if rendered.abort_after is not None and number >= rendered.abort_after:
                await abort_connection(scope, receive)
                return
            if rendered.chunk_delay and number and await closed_within(self.closing, rendered.chunk_delay):
                await abort_connection(scope, receive)
                return
            await send({"type": "http.response.body", "body": chunk, "more_body": True})
        await send({"type": "http.response.body", "body": b"", "more_body": False})


class NoResponse(Response):
    """Used after the connection was aborted: nothing more is sent."""

    def __init__(self) -> None:
        self.status_code = 0
        self.background = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        return None


def _encode(headers: list[tuple[str, str]]) -> list[tuple[bytes, bytes]]:
    return [(k.encode("latin-1"), v.encode("latin-1")) for k, v in headers]


async def wait_disconnect(receive: Receive) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass


async def first_of(*awaitables: Awaitable[Any]) -> None:
    """Wait until the first of ``awaitables`` finishes, cancelling the rest."""
    tasks = [asyncio.ensure_future(a) for a in awaitables]
    try:
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


async def closed_within(closing: asyncio.Event, seconds: float) -> bool:
    """Sleep ``seconds`` unless the fake closes first; True if it closed."""
    if seconds <= 0:
        return closing.is_set()
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(closing.wait(), timeout=seconds)
    return closing.is_set()


async def abort_connection(scope: Scope, receive: Receive) -> None:
    """Abort the TCP connection (RST, no response bytes) and wait until the server noticed."""
    transport = scope.get(_TRANSPORT_KEY)
    if transport is None:
        raise RuntimeError("fake LLM provider: no transport to abort (unexpected uvicorn protocol)")
    transport.abort()
    await wait_disconnect(receive)
