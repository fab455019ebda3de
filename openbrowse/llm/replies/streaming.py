"""Watching a reply while it streams: the seam between our provider clients and whoever wants the partial text.

A caller that wants to see a structured reply as it forms installs a :class:`ReplyListener` with
:func:`listening` around the call. While one is installed, our three clients stream the request (Anthropic
Messages, OpenAI Responses, Chat Completions) and hand every fragment of the reply's JSON text to the listener;
the final reply is then assembled from the stream and goes through exactly the path a non-streamed reply takes
(usage, repair, parsing, fault mapping). Without a listener nothing streams, so the judge, pre-flight and other
plain calls are unchanged.

The listener lives in a context variable, so it reaches the client through any number of wrappers (metering,
repair) without a parameter on browser-use's ``ainvoke`` signature.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextvars import ContextVar
from typing import Any, Protocol


class ReplyListener(Protocol):
    """Receives a streamed reply's text. Both calls are awaited inside the read loop, so keep them short."""

    async def reply_started(self) -> None:
        """A new reply begins (each HTTP response, retries included): what came before is not part of it."""

    async def reply_text(self, fragment: str) -> None:
        """The next fragment of the reply's JSON text (a tool call's arguments or the output text)."""


_listener: ContextVar[ReplyListener | None] = ContextVar("openbrowse_reply_listener", default=None)


def current_listener() -> ReplyListener | None:
    """The listener installed for the call in progress, if any (then the client streams)."""
    return _listener.get()


@contextlib.contextmanager
def listening(listener: ReplyListener | None) -> Iterator[None]:
    """Install ``listener`` for the calls made inside the block (``None`` installs nothing)."""
    token = _listener.set(listener)
    try:
        yield
    finally:
        _listener.reset(token)


def is_transport_error(exc: BaseException) -> bool:
    """An httpx/httpx2 transport failure raised while reading a stream (the SDKs do not wrap those)."""
    for cls in type(exc).__mro__:
        if cls.__module__.split(".")[0] in ("httpx", "httpx2") and cls.__name__ in ("TransportError", "StreamError"):
            return True
    return False


def is_timeout(exc: BaseException) -> bool:
    """A read/write/pool timeout of httpx or httpx2."""
    return any(
        cls.__module__.split(".")[0] in ("httpx", "httpx2") and cls.__name__ == "TimeoutException"
        for cls in type(exc).__mro__
    )


def stream_request(exc: BaseException) -> Any:
    """The request a transport error belongs to (httpx raises ``RuntimeError`` when it has none)."""
    try:
        return exc.request  # type: ignore[attr-defined]
    except (AttributeError, RuntimeError):
        return None
