"""Request bodies are bounded (spec §25.1): more than ``MAX_BODY_BYTES`` gets a 413 before anything parses it.

A pure ASGI middleware, so the limit holds for every route and every way of reading a body (``request.body()``,
forms, streams): a ``Content-Length`` above the limit is refused before a byte is read, and a body without one
(chunked) is counted message by message as the app reads it; the message that crosses the limit is never handed
on. Only the uploads of §22.2, which have their own larger cap, are excepted, by path prefix.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable

from starlette.datastructures import Headers
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from openbrowse.domain.ascii_numbers import is_ascii_digits

__all__ = ["BODY_TOO_LARGE", "MAX_BODY_BYTES", "UPLOAD_PATH", "UPLOAD_PATH_PREFIXES", "BodyLimit"]

logger = logging.getLogger(__name__)

MAX_BODY_BYTES = 1 << 20
BODY_TOO_LARGE = "The request body is larger than the limit of 1 MiB."
UPLOAD_PATH_PREFIXES: tuple[str, ...] = ()
"""Path prefixes whose bodies are uploads (spec §22.2, capped by their own route)."""
UPLOAD_PATH = re.compile(r"/v3/(?:sessions|browsers)/[^/]+/uploads/[^/]+")
"""``PUT /v3/{sessions|browsers}/{id}/uploads/{name}``: capped at 100 MiB by its route, streamed to disk."""
WORKSPACE_UPLOAD_PATH = re.compile(r"/v3/workspaces/[^/]+/upload/\d+/.+")
"""A workspace's signed upload (spec §27.1): capped by the size its URL declares, streamed to disk."""


class _BodyTooLarge(Exception):
    """Raised out of ``receive`` inside the app; caught by :class:`BodyLimit`, which answers 413."""


class BodyLimit:
    """ASGI middleware: 413 for an HTTP request body over ``limit`` bytes, except under ``exempt_prefixes``."""

    def __init__(
        self, app: ASGIApp, limit: int = MAX_BODY_BYTES, exempt_prefixes: Iterable[str] = UPLOAD_PATH_PREFIXES
    ) -> None:
        self.app = app
        self.limit = limit
        self.exempt_prefixes = tuple(exempt_prefixes)

    def _exempt(self, path: str) -> bool:
        return any(path.startswith(prefix) for prefix in self.exempt_prefixes) or bool(
            UPLOAD_PATH.fullmatch(path) or WORKSPACE_UPLOAD_PATH.fullmatch(path)
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or self._exempt(str(scope.get("path", ""))):
            await self.app(scope, receive, send)
            return
        declared = _declared_length(Headers(scope=scope))
        if declared is not None and declared > self.limit:
            logger.info("Refused a %d-byte body for %s", declared, scope.get("path", ""))
            await _too_large(scope, receive, send)
            return
        received = 0
        started = False

        async def counting_receive() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.limit:
                    raise _BodyTooLarge
            return message

        async def watching_send(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, counting_receive, watching_send)
        except _BodyTooLarge:
            logger.info("Refused a body of more than %d bytes for %s", self.limit, scope.get("path", ""))
            if not started:
                await _too_large(scope, receive, send)


def _declared_length(headers: Headers) -> int | None:
    value = headers.get("content-length")
    if value is None or not is_ascii_digits(value):
        return None  # the HTTP parser refuses a malformed length before the app sees the request
    return int(value)


async def _too_large(scope: Scope, receive: Receive, send: Send) -> None:
    # Connection: close — the rest of the body is never read, so the connection cannot carry another request.
    response = JSONResponse({"detail": BODY_TOO_LARGE}, status_code=413, headers={"Connection": "close"})
    await response(scope, receive, send)
