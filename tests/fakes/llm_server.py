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
import logging
import signal
import socket
import threading
from typing import TYPE_CHECKING

import uvicorn

from tests.fakes.llm_endpoints import MODELS, Endpoints
from tests.fakes.llm_ledger import Ledger
from tests.fakes.llm_request import Element, LLMRequest, find_elements, find_index
from tests.fakes.llm_script import (
    FOREVER,
    Fault,
    Gate,
    Reply,
    ReplyLike,
    Script,
    Usage,
    agent_step,
    click_on,
    default_reply,
    done,
    is_agent_step,
    is_text_request,
    navigate,
    structured,
    text,
    type_into,
)

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from tests.fakes.llm_request import Api

__all__ = [
    "FOREVER",
    "MODELS",
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
        self._ledger = Ledger(default)
        self.errors: list[BaseException] = self._ledger.errors
        self._endpoints = Endpoints(self._ledger)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._closing: asyncio.Event | None = None
        self._thread: threading.Thread | None = None
        self._server: _Server | None = None
        self._socket: socket.socket | None = None
        self.port = 0
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
            self._endpoints.app,
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
        self._closing = self._endpoints.closing = asyncio.Event()
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
        self._ledger.add_script(script)
        return script

    def default(self, reply: ReplyLike | None = None) -> None:
        """What unmatched requests get; ``None`` restores the built-in default (``done`` / schema example /
        short sentence)."""
        self._ledger.set_default(reply)

    def reset(self) -> None:
        """Forget scripts, recorded requests, errors and the default."""
        self._ledger.reset()

    def gate(self) -> Gate:
        return Gate()

    # -- inspection ------------------------------------------------------------------------------------------

    @property
    def requests(self) -> list[LLMRequest]:
        return self._ledger.requests

    def requests_matching(self, needle: str) -> list[LLMRequest]:
        return self._ledger.matching(needle)

    def wait_for_requests(
        self, count: int = 1, *, match: str | Callable[[LLMRequest], bool] | None = None, timeout: float = 10.0
    ) -> list[LLMRequest]:
        """Block until at least ``count`` matching requests were recorded (``TimeoutError`` otherwise)."""
        return self._ledger.wait_for(count, match, timeout)


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
