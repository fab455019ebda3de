"""The fake LLM provider's HTTP endpoints: one handler for all three wire formats, plus models and health.

A request is recorded, answered by the first matching script (or the default), and the outcome is sent the way
it asks: after a delay or a gate, rendered in the caller's wire format, or as a fault that hangs, drops or cuts
the connection.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import time
from typing import TYPE_CHECKING, Any

from starlette.applications import Starlette
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from tests.fakes.llm_defaults import default_reply
from tests.fakes.llm_render import (
    error_body,
    render_fault_with_content,
    render_malformed,
    render_reply,
    render_status,
)
from tests.fakes.llm_reply import Fault, Reply, ReplyLike, coerce
from tests.fakes.llm_wire import (
    NoResponse,
    WireResponse,
    abort_connection,
    closed_within,
    first_of,
    wait_disconnect,
    with_transport,
)

if TYPE_CHECKING:
    from starlette.requests import Request
    from starlette.types import ASGIApp

    from tests.fakes.llm_ledger import Ledger
    from tests.fakes.llm_outcome import Rendered
    from tests.fakes.llm_request import Api, LLMRequest

log = logging.getLogger(__name__)

MODELS = ("claude-sonnet-5", "claude-opus-5", "claude-sonnet-4-6", "gpt-5.6-terra", "gpt-5.6-sol", "gpt-5.6-luna")


class Endpoints:
    """The ASGI app of one fake provider, answering from its :class:`Ledger`.

    ``closing`` is set by the provider on its server's loop before serving; once it fires, hanging, delayed and
    gated replies are cut off.
    """

    def __init__(self, ledger: Ledger) -> None:
        self.ledger = ledger
        self.closing: asyncio.Event | None = None
        routes = [
            Route("/v1/messages", self._anthropic, methods=["POST"]),
            Route("/v1/messages/count_tokens", self._count_tokens, methods=["POST"]),
            Route("/v1/responses", self._responses, methods=["POST"]),
            Route("/v1/chat/completions", self._chat, methods=["POST"]),
            Route("/v1/models", self._models, methods=["GET"]),
            Route("/health", self._health, methods=["GET"]),
        ]
        self.app: ASGIApp = with_transport(Starlette(routes=routes))

    async def _anthropic(self, request: Request) -> Response:
        return await self._handle(request, "anthropic")

    async def _responses(self, request: Request) -> Response:
        return await self._handle(request, "responses")

    async def _chat(self, request: Request) -> Response:
        return await self._handle(request, "chat")

    async def _count_tokens(self, request: Request) -> Response:
        return JSONResponse({"input_tokens": max(1, len(await request.body()) // 4)})

    async def _health(self, request: Request) -> Response:
        return JSONResponse({"ok": True, "requests": self.ledger.count})

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
        return self.ledger.record(api, request.url.path, headers, raw)

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
        closing = self.closing
        assert closing is not None
        if record.body is None:
            self.ledger.finish(record, "error:invalid_json", 400)
            return JSONResponse(error_body(api, 400, "The request body is not valid JSON."), status_code=400)
        try:
            outcome = await self._resolve(self.ledger.choose(record), record)
        except Exception as exc:
            log.exception("fake LLM provider: reply callable failed for %s", record.summary())
            self.ledger.report_error(exc)
            self.ledger.finish(record, "error:callable", 500)
            return JSONResponse(error_body(api, 500, f"fake provider: reply callable failed: {exc!r}"), status_code=500)

        if await closed_within(closing, outcome.delay):
            return await self._cut(request, record, "fault:closed")
        if isinstance(outcome, Reply) and outcome.gate is not None:
            await first_of(outcome.gate.wait_open(), closing.wait())
            if closing.is_set():
                return await self._cut(request, record, "fault:closed")

        rendered: Rendered
        if isinstance(outcome, Reply):
            rendered = render_reply(record, outcome)
        elif outcome.kind == "hang":
            self.ledger.finish(record, "fault:hang", None)
            await first_of(wait_disconnect(request.receive), closing.wait())
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
        self.ledger.finish(record, rendered.kind, rendered.status)
        return WireResponse(rendered, closing)

    async def _cut(self, request: Request, record: LLMRequest, kind: str) -> Response:
        self.ledger.finish(record, kind, None)
        await abort_connection(request.scope, request.receive)
        return NoResponse()
