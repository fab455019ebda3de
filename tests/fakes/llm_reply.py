"""The reply vocabulary of the fake LLM provider: replies, faults, gates, token usage and their builders.

A script entry is a :class:`Reply` (built with :func:`structured` / :func:`text` / :func:`streamed` to add usage,
delay, thinking, repeats ...), a :class:`Fault`, a plain ``dict`` or ``str``, or a callable choosing one of those
(see :mod:`tests.fakes.llm_script`).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import sys
import threading
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, NamedTuple, TypeAlias

from tests.fakes.llm_request import LLMRequest

FOREVER: int = sys.maxsize
"""``times=FOREVER`` makes a script entry (or a fault) repeat for every following request."""

FaultKind = Literal["status", "hang", "drop", "malformed", "truncated", "stream_cut"]
MalformedMode = Literal["json", "envelope", "schema"]


class Usage(NamedTuple):
    """Token usage reported in a reply; the numbers land verbatim in the provider's own fields.

    Anthropic: input_tokens / output_tokens / cache_read_input_tokens / cache_creation_input_tokens (all 5-minute
    cache). OpenAI: input_tokens|prompt_tokens (which by OpenAI's convention already include the cached ones) /
    output_tokens|completion_tokens / cached_tokens / cache_write_tokens, and ``reasoning`` as reasoning_tokens.
    """

    input: int
    output: int
    cache_read: int = 0
    cache_write: int = 0
    reasoning: int = 0


UsageLike: TypeAlias = Usage | tuple[int, ...]


class Gate:
    """Holds replies until :meth:`open` is called (from any thread); see ``Reply.gate``.

    ``wait_entered()`` blocks until a request reached the gate, so a test knows an LLM call is in flight.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._open = False
        self._entered = threading.Event()
        self._entered_count = 0
        self._waiters: list[tuple[asyncio.AbstractEventLoop, asyncio.Event]] = []

    @property
    def entered_count(self) -> int:
        return self._entered_count

    @property
    def is_open(self) -> bool:
        return self._open

    def wait_entered(self, timeout: float = 10.0) -> bool:
        return self._entered.wait(timeout)

    def open(self) -> None:
        with self._lock:
            self._open = True
            waiters, self._waiters = self._waiters, []
        for loop, event in waiters:
            with contextlib.suppress(RuntimeError):  # loop already closed
                loop.call_soon_threadsafe(event.set)

    async def wait_open(self) -> None:
        event = asyncio.Event()
        with self._lock:
            self._entered_count += 1
            self._entered.set()
            if self._open:
                return
            self._waiters.append((asyncio.get_running_loop(), event))
        await event.wait()


@dataclass(frozen=True)
class Reply:
    """A successful reply. ``content`` is a dict (structured) or a str (plain text)."""

    content: dict[str, Any] | str
    usage: Usage | None = None
    delay: float = 0.0
    thinking: str | None = None
    tool: str | None = None
    chunk_delay: float = 0.0
    gate: Gate | None = None
    times: int = 1
    parts: tuple[dict[str, Any], ...] = ()
    """A structured reply split over several parts: Anthropic gets one ``tool_use`` block per part (parallel
    tool calls), OpenAI one JSON object per part in the text. ``content`` is then only used for usage."""
    chunk_chars: int | None = None
    """Streamed replies: characters of reply text per event (default: the text in about 32 events). With
    ``chunk_delay`` this paces a reply, e.g. so a test can watch code being written."""

    @property
    def kind(self) -> Literal["structured", "text"]:
        return "structured" if isinstance(self.content, dict) else "text"

    def forever(self) -> Reply:
        return dataclasses.replace(self, times=FOREVER)


@dataclass(frozen=True)
class Fault:
    """A failure, rendered in the caller's provider format. Build with the class methods."""

    kind: FaultKind
    status_code: int = 200
    message: str | None = None
    retry_after: float | None = None
    mode: MalformedMode = "json"
    content: dict[str, Any] | str | None = None
    usage: Usage | None = None
    delay: float = 0.0
    times: int = 1

    @classmethod
    def status(
        cls,
        code: int,
        message: str | None = None,
        *,
        retry_after: float | None = None,
        times: int = 1,
        delay: float = 0.0,
    ) -> Fault:
        """HTTP error with the provider's real error body (``retry-after`` defaults to 1 s on 429)."""
        if retry_after is None and code == 429:
            retry_after = 1.0
        return cls("status", status_code=code, message=message, retry_after=retry_after, times=times, delay=delay)

    @classmethod
    def hang(cls, *, times: int = 1) -> Fault:
        """Accept the request and never answer, until the client gives up or the fake closes."""
        return cls("hang", times=times)

    @classmethod
    def drop(cls, *, times: int = 1, delay: float = 0.0) -> Fault:
        """Accept the request, then abort the TCP connection without writing a byte."""
        return cls("drop", times=times, delay=delay)

    @classmethod
    def malformed(cls, mode: MalformedMode = "json", *, times: int = 1) -> Fault:
        """200 with a broken body: ``json`` not JSON at all, ``envelope`` JSON but not the provider's response
        shape, ``schema`` a well-formed provider response whose structured content does not fit the schema."""
        return cls("malformed", mode=mode, times=times)

    @classmethod
    def truncated(
        cls, content: dict[str, Any] | str | None = None, *, times: int = 1, usage: UsageLike | None = None
    ) -> Fault:
        """Output cut by the token limit (max_tokens / incomplete / length); ``content`` is what was being
        written (default: what the default reply would have been)."""
        return cls("truncated", content=content, times=times, usage=_usage(usage))

    @classmethod
    def stream_cut(cls, content: dict[str, Any] | str | None = None, *, times: int = 1) -> Fault:
        """Send the status, headers and about half of the body (or of the SSE events), then abort the connection."""
        return cls("stream_cut", content=content, times=times)

    def forever(self) -> Fault:
        return dataclasses.replace(self, times=FOREVER)


ReplyLike: TypeAlias = Reply | Fault | dict[str, Any] | str | Callable[[LLMRequest], "ReplyLike | Awaitable[ReplyLike]"]


def _usage(value: UsageLike | None) -> Usage | None:
    if value is None or isinstance(value, Usage):
        return value
    return Usage(*value)


def text(content: str, **options: Any) -> Reply:
    """A plain-text reply. Options: usage=(in, out, cache_read, cache_write), delay, thinking, chunk_delay, gate,
    times."""
    return reply(content, **options)


def structured(content: Mapping[str, Any], **options: Any) -> Reply:
    """A structured reply (tool input / JSON output). Options as for :func:`text`, plus ``tool=`` (Anthropic
    tool name when the request does not force one)."""
    return reply(dict(content), **options)


def reply(
    content: dict[str, Any] | str,
    *,
    parts: tuple[dict[str, Any], ...] = (),
    usage: UsageLike | None = None,
    delay: float = 0.0,
    thinking: str | None = None,
    tool: str | None = None,
    chunk_delay: float = 0.0,
    chunk_chars: int | None = None,
    gate: Gate | None = None,
    times: int = 1,
) -> Reply:
    return Reply(
        content=content,
        usage=_usage(usage),
        delay=delay,
        thinking=thinking,
        tool=tool,
        chunk_delay=chunk_delay,
        gate=gate,
        times=times,
        parts=parts,
        chunk_chars=chunk_chars,
    )


def coerce(value: Reply | Fault | dict[str, Any] | str) -> Reply | Fault:
    if isinstance(value, Reply | Fault):
        return value
    if isinstance(value, dict | str):
        return Reply(content=value)
    raise TypeError(f"not a reply: {value!r}")


def entry_times(value: object) -> int:
    return value.times if isinstance(value, Reply | Fault) else 1


def streamed(content: Mapping[str, Any], *, chunk_delay: float, chunk_chars: int = 24, **options: Any) -> Reply:
    """A structured reply that, when the request streams, arrives ``chunk_chars`` characters every
    ``chunk_delay`` seconds (all three wire formats)."""
    return reply(dict(content), chunk_delay=chunk_delay, chunk_chars=chunk_chars, **options)
