"""A fake LLM provider: a real HTTP server speaking Anthropic Messages, OpenAI Responses and Chat Completions.

The product reaches it exactly as it would reach a local model server::

    with FakeProvider() as fake:
        env = {"ANTHROPIC_BASE_URL": fake.anthropic_base_url, "OPENAI_BASE_URL": fake.openai_base_url}
        fake.script("TOKEN-123", [click_on("About us"), done("Found it")], when=is_agent_step)
        fake.script("TOKEN-429", [Fault.status(429).forever()])
        ...                                  # run the product (any process) against those URLs
        assert fake.requests_matching("TOKEN-123")[0].api == "anthropic"

Standalone (manual checks, benchmarks): ``python -m tests.fakes.llm_server --port 8799``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import inspect
import logging
import signal
import socket
import threading
import time
from typing import TYPE_CHECKING, Any

import uvicorn
from starlette.applications import Starlette
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from tests.fakes.llm_render import (
    Rendered,
    error_body,
    render_fault_with_content,
    render_malformed,
    render_reply,
    render_status,
)
from tests.fakes.llm_request import Api, Element, LLMRequest, find_elements, find_index, parse_request
from tests.fakes.llm_script import (
    FOREVER,
    Fault,
    Gate,
    Reply,
    ReplyLike,
    Usage,
    agent_step,
    click_on,
    coerce,
    default_reply,
    done,
    entry_times,
    navigate,
    structured,
    text,
    type_into,
)

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Sequence

    from starlette.requests import Request
    from starlette.types import ASGIApp, Receive, Scope, Send

__all__ = [
    "FOREVER",
    "Element",
    "FakeProvider",
    "Fault",
    "Gate",
    "LLMRequest",
    "Reply",
    "ReplyLike",
    "Script",
    "Usage",
    "agent_step",
    "click_on",
    "done",
    "find_elements",
    "find_index",
    "is_agent_step",
    "is_text_request",
    "navigate",
    "structured",
    "text",
    "type_into",
]

log = logging.getLogger(__name__)

_TRANSPORT_KEY = "fake_llm.transport"
MODELS = ("claude-sonnet-5", "claude-opus-5", "claude-sonnet-4-6", "gpt-5.6-terra", "gpt-5.6-sol", "gpt-5.6-luna")


def is_agent_step(request: LLMRequest) -> bool:
    """Predicate for ``script(when=...)``: a browser-use agent step (page state or AgentOutput schema)."""
    return request.is_agent_step


def is_text_request(request: LLMRequest) -> bool:
    """Predicate for ``script(when=...)``: a plain-text request (no schema, no page state)."""
    return not request.structured and not request.is_agent_step


class Script:
    """Replies for the requests that match; consumed in order, then ``then`` (default: the fake's default)."""

    def __init__(
        self,
        label: str,
        match: str | Callable[[LLMRequest], bool],
        replies: Sequence[ReplyLike],
        then: ReplyLike | None,
        api: Api | None,
        when: Callable[[LLMRequest], bool] | None,
    ) -> None:
        self.label = label
        self.match = match
        self.entries = list(replies)
        self.then = then
        self.api = api
        self.when = when
        self.requests: list[LLMRequest] = []
        self._position = 0
        self._used = 0

    def matches(self, request: LLMRequest) -> bool:
        if self.api is not None and request.api != self.api:
            return False
        if self.when is not None and not self.when(request):
            return False
        return self.match in request.text if isinstance(self.match, str) else self.match(request)

    def take(self) -> ReplyLike | None:
        """The next scripted entry, or None once the script is exhausted."""
        if self._position >= len(self.entries):
            return None
        entry = self.entries[self._position]
        self._used += 1
        if self._used >= entry_times(entry):
            self._position, self._used = self._position + 1, 0
        return entry

    @property
    def exhausted(self) -> bool:
        return self._position >= len(self.entries)

    @property
    def consumed(self) -> int:
        return len(self.requests)


class _WireResponse(Response):
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
                await _abort(scope, receive)
                return
            if rendered.chunk_delay and number and await _closed_within(self.closing, rendered.chunk_delay):
                await _abort(scope, receive)
                return
            await send({"type": "http.response.body", "body": chunk, "more_body": True})
        await send({"type": "http.response.body", "body": b"", "more_body": False})


class _NoResponse(Response):
    """Used after the connection was aborted: nothing more is sent."""

    def __init__(self) -> None:
        self.status_code = 0
        self.background = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        return None


def _encode(headers: list[tuple[str, str]]) -> list[tuple[bytes, bytes]]:
    return [(k.encode("latin-1"), v.encode("latin-1")) for k, v in headers]


async def _wait_disconnect(receive: Receive) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass


async def _first(*awaitables: Awaitable[Any]) -> None:
    """Wait until the first of ``awaitables`` finishes, cancelling the rest."""
    tasks = [asyncio.ensure_future(a) for a in awaitables]
    try:
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


async def _closed_within(closing: asyncio.Event, seconds: float) -> bool:
    """Sleep ``seconds`` unless the fake closes first; True if it closed."""
    if seconds <= 0:
        return closing.is_set()
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(closing.wait(), timeout=seconds)
    return closing.is_set()


async def _abort(scope: Scope, receive: Receive) -> None:
    """Abort the TCP connection (RST, no response bytes) and wait until the server noticed."""
    transport = scope.get(_TRANSPORT_KEY)
    if transport is None:
        raise RuntimeError("fake LLM provider: no transport to abort (unexpected uvicorn protocol)")
    transport.abort()
    await _wait_disconnect(receive)


class _Server(uvicorn.Server):
    def __init__(self, config: uvicorn.Config, ready: threading.Event) -> None:
        super().__init__(config)
        self._ready = ready

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets=sockets)
        self._ready.set()


class FakeProvider:
    """The fake LLM provider, served from a background thread with its own event loop."""

    def __init__(self, *, host: str = "127.0.0.1", port: int = 0, default: ReplyLike | None = None, start: bool = True):
        self.host = host
        self._requested_port = port
        self._lock = threading.RLock()
        self._changed = threading.Condition(self._lock)
        self._requests: list[LLMRequest] = []
        self._scripts: list[Script] = []
        self._default: ReplyLike = default if default is not None else default_reply
        self.errors: list[BaseException] = []
        self._loop: asyncio.AbstractEventLoop | None = None
        self._closing: asyncio.Event | None = None
        self._thread: threading.Thread | None = None
        self._server: _Server | None = None
        self._socket: socket.socket | None = None
        self.port = 0
        routes = [
            Route("/v1/messages", self._anthropic, methods=["POST"]),
            Route("/v1/messages/count_tokens", self._count_tokens, methods=["POST"]),
            Route("/v1/responses", self._responses, methods=["POST"]),
            Route("/v1/chat/completions", self._chat, methods=["POST"]),
            Route("/v1/models", self._models, methods=["GET"]),
            Route("/health", self._health, methods=["GET"]),
        ]
        self._app: ASGIApp = Starlette(routes=routes)
        if start:
            self.start()

    # -- lifecycle -------------------------------------------------------------------------------------------

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def anthropic_base_url(self) -> str:
        return self.url

    @property
    def openai_base_url(self) -> str:
        return f"{self.url}/v1"

    def env(self) -> dict[str, str]:
        """Environment for a product process: base URLs plus dummy API keys."""
        return {
            "ANTHROPIC_BASE_URL": self.anthropic_base_url,
            "OPENAI_BASE_URL": self.openai_base_url,
            "ANTHROPIC_API_KEY": "sk-ant-fake",
            "OPENAI_API_KEY": "sk-fake",
        }

    def start(self, timeout: float = 10.0) -> FakeProvider:
        if self._thread is not None:
            return self
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((self.host, self._requested_port))
        self._socket = sock
        self.port = sock.getsockname()[1]
        config = uvicorn.Config(
            self._asgi,
            http="h11",
            interface="asgi3",
            lifespan="off",
            log_config=None,
            access_log=False,
            proxy_headers=False,
            timeout_graceful_shutdown=3,
        )
        ready = threading.Event()
        self._server = _Server(config, ready)
        self._thread = threading.Thread(target=self._run, args=(ready,), name=f"fake-llm-{self.port}", daemon=True)
        self._thread.start()
        if not ready.wait(timeout) or not self._server.started:
            self.close()
            raise RuntimeError(f"fake LLM provider did not start on {self.url}")
        log.info("fake LLM provider listening on %s", self.url)
        return self

    def _run(self, ready: threading.Event) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        try:
            loop.run_until_complete(self._serve())
        except Exception:
            log.exception("fake LLM provider crashed")
        finally:
            ready.set()
            loop.close()

    async def _serve(self) -> None:
        self._closing = asyncio.Event()
        assert self._server is not None
        assert self._socket is not None
        await self._server.serve(sockets=[self._socket])

    def close(self) -> None:
        """Stop serving: hanging and delayed replies are cut off, the thread is joined."""
        if self._thread is None:
            return
        loop, closing = self._loop, self._closing
        if loop is not None and closing is not None and not loop.is_closed():
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(closing.set)
        if self._server is not None:
            self._server.should_exit = True
        self._thread.join(15)
        if self._thread.is_alive():
            log.warning("fake LLM provider thread did not stop in time")
        self._thread = None
        if self._socket is not None:
            self._socket.close()

    def __enter__(self) -> FakeProvider:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- scripting -------------------------------------------------------------------------------------------

    def script(
        self,
        match: str | Callable[[LLMRequest], bool],
        replies: Sequence[ReplyLike],
        *,
        then: ReplyLike | None = None,
        api: Api | None = None,
        when: Callable[[LLMRequest], bool] | None = None,
        label: str | None = None,
    ) -> Script:
        """Requests whose text contains ``match`` (or for which ``match(request)`` is true), restricted to
        ``api`` and ``when`` if given, consume ``replies`` in order; afterwards they get ``then`` (default: the
        fake's default). Scripts are tried in the order they were added."""
        name = label or (match if isinstance(match, str) else str(getattr(match, "__name__", "script")))
        script = Script(name, match, replies, then, api, when)
        with self._lock:
            self._scripts.append(script)
        return script

    def default(self, reply: ReplyLike | None = None) -> None:
        """What unmatched requests get; ``None`` restores the built-in default (``done`` / schema example /
        short sentence)."""
        with self._lock:
            self._default = reply if reply is not None else default_reply

    def reset(self) -> None:
        """Forget scripts, recorded requests, errors and the default."""
        with self._lock:
            self._scripts.clear()
            self._requests.clear()
            self.errors.clear()
            self._default = default_reply

    def gate(self) -> Gate:
        return Gate()

    # -- inspection ------------------------------------------------------------------------------------------

    @property
    def requests(self) -> list[LLMRequest]:
        with self._lock:
            return list(self._requests)

    def requests_matching(self, needle: str) -> list[LLMRequest]:
        with self._lock:
            return [r for r in self._requests if needle in r.text]

    def wait_for_requests(
        self, count: int = 1, *, match: str | Callable[[LLMRequest], bool] | None = None, timeout: float = 10.0
    ) -> list[LLMRequest]:
        """Block until at least ``count`` matching requests were recorded (``TimeoutError`` otherwise)."""

        def selected() -> list[LLMRequest]:
            if match is None:
                return list(self._requests)
            if isinstance(match, str):
                return [r for r in self._requests if match in r.text]
            return [r for r in self._requests if match(r)]

        with self._changed:
            if not self._changed.wait_for(lambda: len(selected()) >= count, timeout):
                raise TimeoutError(f"expected {count} request(s) matching {match!r}, got {len(selected())}")
            return selected()

    # -- serving ---------------------------------------------------------------------------------------------

    async def _asgi(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            owner = getattr(send, "__self__", None)
            scope[_TRANSPORT_KEY] = getattr(owner, "transport", None)
        await self._app(scope, receive, send)

    async def _anthropic(self, request: Request) -> Response:
        return await self._handle(request, "anthropic")

    async def _responses(self, request: Request) -> Response:
        return await self._handle(request, "responses")

    async def _chat(self, request: Request) -> Response:
        return await self._handle(request, "chat")

    async def _count_tokens(self, request: Request) -> Response:
        return JSONResponse({"input_tokens": max(1, len(await request.body()) // 4)})

    async def _health(self, request: Request) -> Response:
        return JSONResponse({"ok": True, "requests": len(self._requests)})

    async def _models(self, request: Request) -> Response:
        created = int(time.time())
        data = [
            {
                "id": name,
                "object": "model",
                "created": created,
                "owned_by": "fake",
                "type": "model",
                "display_name": name,
                "created_at": "2026-01-01T00:00:00Z",
            }
            for name in MODELS
        ]
        body = {"object": "list", "data": data, "has_more": False, "first_id": MODELS[0], "last_id": MODELS[-1]}
        return JSONResponse(body)

    def _record(self, api: Api, request: Request, raw: bytes) -> LLMRequest:
        headers = {k.lower(): v for k, v in request.headers.items()}
        with self._changed:
            record = parse_request(len(self._requests) + 1, api, request.url.path, headers, raw)
            self._requests.append(record)
            self._changed.notify_all()
        return record

    def _finish(self, record: LLMRequest, kind: str, status: int | None) -> None:
        with self._changed:
            record.reply_kind, record.status = kind, status
            self._changed.notify_all()
        log.debug("fake LLM: %s", record.summary())

    def _choose(self, record: LLMRequest) -> ReplyLike:
        with self._lock:
            for script in self._scripts:
                if script.matches(record):
                    script.requests.append(record)
                    record.script = script.label
                    entry = script.take()
                    if entry is not None:
                        return entry
                    return script.then if script.then is not None else self._default
            return self._default

    async def _resolve(self, entry: ReplyLike, record: LLMRequest) -> Reply | Fault:
        value: Any = entry
        for _ in range(8):
            if not callable(value):
                break
            value = value(record)
            if inspect.isawaitable(value):
                value = await value
        return coerce(value)

    async def _handle(self, request: Request, api: Api) -> Response:
        raw = await request.body()
        record = self._record(api, request, raw)
        closing = self._closing
        assert closing is not None
        if record.body is None:
            self._finish(record, "error:invalid_json", 400)
            return JSONResponse(error_body(api, 400, "The request body is not valid JSON."), status_code=400)
        try:
            outcome = await self._resolve(self._choose(record), record)
        except Exception as exc:
            log.exception("fake LLM provider: reply callable failed for %s", record.summary())
            with self._lock:
                self.errors.append(exc)
            self._finish(record, "error:callable", 500)
            return JSONResponse(error_body(api, 500, f"fake provider: reply callable failed: {exc!r}"), status_code=500)

        if await _closed_within(closing, outcome.delay):
            return await self._cut(request, record, "fault:closed")
        if isinstance(outcome, Reply) and outcome.gate is not None:
            await _first(outcome.gate.wait_open(), closing.wait())
            if closing.is_set():
                return await self._cut(request, record, "fault:closed")

        rendered: Rendered
        if isinstance(outcome, Reply):
            rendered = render_reply(record, outcome)
        elif outcome.kind == "hang":
            self._finish(record, "fault:hang", None)
            await _first(_wait_disconnect(request.receive), closing.wait())
            return await self._cut(request, record, "fault:hang")
        elif outcome.kind == "drop":
            return await self._cut(request, record, "fault:drop")
        elif outcome.kind == "status":
            rendered = render_status(record, outcome)
        elif outcome.kind == "malformed":
            rendered = render_malformed(record, outcome)
        else:
            content = outcome.content if outcome.content is not None else default_reply(record)
            rendered = render_fault_with_content(record, outcome, content)
        self._finish(record, rendered.kind, rendered.status)
        return _WireResponse(rendered, closing)

    async def _cut(self, request: Request, record: LLMRequest, kind: str) -> Response:
        self._finish(record, kind, None)
        await _abort(request.scope, request.receive)
        return _NoResponse()


def main(argv: Sequence[str] | None = None) -> None:
    """Serve the default replies (``done`` for agent steps, a short sentence for text) until interrupted."""
    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8799)
    parser.add_argument("--delay", type=float, default=0.0, help="seconds before every reply")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    delay: float = args.delay

    def delayed_default(request: LLMRequest) -> Reply:
        return Reply(content=default_reply(request), delay=delay)

    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    with FakeProvider(host=args.host, port=args.port, default=delayed_default) as fake:
        log.info("ANTHROPIC_BASE_URL=%s OPENAI_BASE_URL=%s", fake.anthropic_base_url, fake.openai_base_url)
        stop.wait()
        log.info("served %d request(s)", len(fake.requests))


if __name__ == "__main__":
    main()
