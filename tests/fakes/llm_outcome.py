"""A provider-neutral answer of the fake LLM provider and the bytes it becomes: shared by every wire format."""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from tests.fakes.llm_reply import Reply, Usage

if TYPE_CHECKING:
    from tests.fakes.llm_request import LLMRequest

JSON_HEADERS = (("content-type", "application/json"),)
SSE_HEADERS = (("content-type", "text/event-stream; charset=utf-8"), ("cache-control", "no-cache"))


@dataclass
class Rendered:
    """Bytes to send: a status, headers and body chunks (one chunk unless streaming)."""

    status: int
    headers: list[tuple[str, str]]
    chunks: list[bytes]
    kind: str
    abort_after: int | None = None  # abort the connection after sending this many chunks
    chunk_delay: float = 0.0


@dataclass
class Outcome:
    """A provider-neutral successful (or truncated) answer."""

    content: dict[str, Any] | str
    usage: Usage
    thinking: str | None = None
    tool: str | None = None
    truncated: bool = False
    ids: dict[str, str] = field(default_factory=dict)
    parts: tuple[dict[str, Any], ...] = ()
    chunk_chars: int | None = None

    @property
    def text(self) -> str:
        if self.parts:
            return "\n".join(json.dumps(part, ensure_ascii=False) for part in self.parts)
        return self.content if isinstance(self.content, str) else json.dumps(self.content, ensure_ascii=False)


def new_id(prefix: str) -> str:
    return f"{prefix}{uuid.uuid4().hex[:24]}"


def cut_text(value: str) -> str:
    return value[: max(1, len(value) // 2)]


def cut_dict(value: dict[str, Any]) -> dict[str, Any]:
    keys = list(value)
    return {k: value[k] for k in keys[: len(keys) // 2]}


def pieces(value: str, chars: int | None = None) -> list[str]:
    size = chars or max(16, len(value) // 32 + 1)
    return [value[i : i + size] for i in range(0, len(value), size)] or [""]


def estimate_usage(request: LLMRequest, reply: Reply | None, content: dict[str, Any] | str) -> Usage:
    if reply is not None and reply.usage is not None:
        return reply.usage
    out_text = content if isinstance(content, str) else json.dumps(content)
    thinking = reply.thinking if reply is not None else None
    reasoning = len(thinking) // 4 if thinking else 0
    return Usage(
        input=max(1, len(request.raw_body) // 4), output=max(1, len(out_text) // 4) + reasoning, reasoning=reasoning
    )


def outcome_for(request: LLMRequest, reply: Reply) -> Outcome:
    tool = reply.tool or (request.schema_name if request.schema_name in request.tool_names else None)
    usage = estimate_usage(request, reply, reply.content)
    return Outcome(
        content=reply.content,
        usage=usage,
        thinking=reply.thinking,
        tool=tool if reply.kind == "structured" else None,
        parts=reply.parts,
        chunk_chars=reply.chunk_chars,
    )


def json_rendered(status: int, body: Any, kind: str, extra: list[tuple[str, str]] | None = None) -> Rendered:
    data = json.dumps(body, ensure_ascii=False).encode()
    return Rendered(status, [*JSON_HEADERS, *(extra or [])], [data], kind)


def sse_chunks(events: list[tuple[str | None, Any]], kind: str) -> list[bytes]:
    chunks: list[bytes] = []
    for name, data in events:
        payload = data if isinstance(data, str) else json.dumps(data, ensure_ascii=False)
        prefix = f"event: {name}\n" if name else ""
        chunks.append(f"{prefix}data: {payload}\n\n".encode())
    return chunks
