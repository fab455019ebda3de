"""Recorded requests of the fake LLM provider, and helpers that read browser-use's page state from them.

A request is parsed once into an :class:`LLMRequest`: which API it used, the parsed JSON body, a flattened
``text`` of the system prompt and all messages (used for script matching), the schema or tool that was
requested, and later the kind of reply that was sent.
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass, field
from typing import Any, Literal

Api = Literal["anthropic", "responses", "chat"]

REVIEW_MARKER = "OPENBROWSE-REVIEW"
_TEXT_KEYS = ("system", "instructions", "text", "content", "thinking", "output", "arguments", "summary")
_STATE_RE = re.compile(r"<browser_state>(.*?)(?:</browser_state>|\Z)", re.DOTALL)
_ELEMENT_RE = re.compile(r"^(\t*)(?:\|SHADOW\((?:open|closed)\)\|)?\*?(?:\|scroll element)?\[(\d+)\]<")


@dataclass
class LLMRequest:
    """One request that reached the fake provider, as the tests see it."""

    seq: int
    api: Api
    path: str
    headers: dict[str, str]
    body: dict[str, Any] | None
    raw_body: bytes
    text: str
    model: str | None
    stream: bool
    schema_name: str | None
    schema: dict[str, Any] | None
    tool_names: list[str]
    max_tokens: int | None
    reasoning: dict[str, Any] | None
    timestamp: float = field(default_factory=time.time)
    reply_kind: str = "pending"
    status: int | None = None
    script: str | None = None

    @property
    def structured(self) -> bool:
        """True when the request asked for structured output natively (forced tool, json_schema format)."""
        return self.schema_name is not None

    @property
    def is_agent_step(self) -> bool:
        """True for a browser-use agent step: the request carries the page state or the AgentOutput schema."""
        if self.schema_name == "AgentOutput" or "<browser_state>" in self.text:
            return True
        return bool(self.schema and "action" in self.schema.get("properties", {}))

    @property
    def is_review(self) -> bool:
        """True for the reviewer's judge call (its system prompt carries the review marker)."""
        return REVIEW_MARKER in self.text and not self.is_agent_step

    @property
    def browser_state(self) -> str | None:
        """The last (current) ``<browser_state>`` block of the request, without the tags."""
        return last_browser_state(self.text)

    def contains(self, needle: str) -> bool:
        return needle in self.text

    def find_index(self, needle: str) -> int:
        """Index of the interactive element whose line or own text contains ``needle`` (see :func:`find_index`)."""
        return find_index(self, needle)

    def summary(self) -> str:
        schema = self.schema_name
        return f"#{self.seq} {self.api} model={self.model} stream={self.stream} schema={schema} -> {self.reply_kind}"


# --------------------------------------------------------------------------------------------------------------
# Parsing a request body


def _collect_text(obj: Any, out: list[str]) -> None:
    if isinstance(obj, str):
        out.append(obj)
    elif isinstance(obj, list):
        for item in obj:
            _collect_text(item, out)
    elif isinstance(obj, dict):
        if obj.get("type") in ("tool_use", "server_tool_use") and "input" in obj:
            out.append(json.dumps(obj["input"], ensure_ascii=False))
        for key in _TEXT_KEYS:
            if key in obj:
                _collect_text(obj[key], out)


def flatten_text(api: Api, body: dict[str, Any]) -> str:
    """System prompt / instructions first, then every message's text, joined by newlines."""
    out: list[str] = []
    if api == "anthropic":
        _collect_text(body.get("system"), out)
        _collect_text(body.get("messages"), out)
    elif api == "responses":
        _collect_text(body.get("instructions"), out)
        _collect_text(body.get("input"), out)
    else:
        _collect_text(body.get("messages"), out)
    return "\n".join(out)


def _schema_info(api: Api, body: dict[str, Any]) -> tuple[str | None, dict[str, Any] | None, list[str]]:
    tools = [t for t in body.get("tools") or [] if isinstance(t, dict)]
    names = [str(t.get("name") or (t.get("function") or {}).get("name") or "") for t in tools]
    if api == "anthropic":
        choice = body.get("tool_choice") or {}
        chosen: str | None = None
        if choice.get("type") == "tool":
            chosen = choice.get("name")
        elif choice.get("type") != "none" and len(tools) == 1:
            chosen = names[0]
        for tool in tools:
            if chosen is not None and tool.get("name") == chosen:
                return chosen, tool.get("input_schema"), names
        fmt = (body.get("output_config") or {}).get("format") or body.get("output_format") or {}
        if fmt.get("type") == "json_schema":
            return "json_schema", fmt.get("schema"), names
        return None, None, names
    if api == "chat":
        fmt = body.get("response_format") or {}
        if fmt.get("type") == "json_schema":
            spec = fmt.get("json_schema") or {}
            return str(spec.get("name") or "json_schema"), spec.get("schema"), names
        if fmt.get("type") == "json_object":
            return "json_object", None, names
        return None, None, names
    fmt = (body.get("text") or {}).get("format") or {}
    if fmt.get("type") == "json_schema":
        return str(fmt.get("name") or "json_schema"), fmt.get("schema"), names
    if fmt.get("type") == "json_object":
        return "json_object", None, names
    return None, None, names


def _reasoning(api: Api, body: dict[str, Any]) -> dict[str, Any] | None:
    if api == "anthropic":
        thinking = body.get("thinking")
        return thinking if isinstance(thinking, dict) and thinking.get("type") != "disabled" else None
    if api == "responses":
        reasoning = body.get("reasoning")
        if isinstance(reasoning, dict) and reasoning.get("effort") not in (None, "none"):
            return reasoning
        return None
    effort = body.get("reasoning_effort")
    return {"effort": effort} if effort not in (None, "none") else None


def parse_request(seq: int, api: Api, path: str, headers: dict[str, str], raw_body: bytes) -> LLMRequest:
    try:
        parsed = json.loads(raw_body) if raw_body else {}
    except ValueError:
        parsed = None
    body = parsed if isinstance(parsed, dict) else None
    data = body or {}
    schema_name, schema, tool_names = _schema_info(api, data)
    max_tokens = data.get("max_tokens") or data.get("max_output_tokens") or data.get("max_completion_tokens")
    return LLMRequest(
        seq=seq,
        api=api,
        path=path,
        headers=headers,
        body=body,
        raw_body=raw_body,
        text=flatten_text(api, data),
        model=data.get("model"),
        stream=bool(data.get("stream")),
        schema_name=schema_name,
        schema=schema if isinstance(schema, dict) else None,
        tool_names=tool_names,
        max_tokens=max_tokens if isinstance(max_tokens, int) else None,
        reasoning=_reasoning(api, data),
    )


# --------------------------------------------------------------------------------------------------------------
# Reading browser-use's serialized page state


@dataclass(frozen=True)
class Element:
    """One interactive element of the serialized page state: ``[index]<tag attrs />`` plus its own text lines."""

    index: int
    line: str
    text: str
    depth: int

    def matches(self, needle: str) -> bool:
        return needle in self.line or needle in self.text


def last_browser_state(text: str) -> str | None:
    states = _STATE_RE.findall(text)
    return states[-1] if states else None


def find_elements(source: LLMRequest | str) -> list[Element]:
    """Interactive elements of the current page state, in document order.

    A text line belongs to the nearest preceding element that is shallower than the line (its innermost
    enclosing element), so a nested element's text is not attributed to its container.
    """
    raw = source.text if isinstance(source, LLMRequest) else source
    state = last_browser_state(raw)
    if state is None:
        return []
    elements: list[tuple[int, str, int, list[str]]] = []
    stack: list[int] = []  # positions in `elements` of the currently open (enclosing) elements
    for line in state.splitlines():
        depth = len(line) - len(line.lstrip("\t"))
        while stack and elements[stack[-1]][2] >= depth:
            stack.pop()
        found = _ELEMENT_RE.match(line)
        if found:
            elements.append((int(found.group(2)), line.strip(), depth, []))
            stack.append(len(elements) - 1)
        elif stack and line.strip():
            elements[stack[-1]][3].append(line.strip())
    return [Element(index=i, line=ln, text="\n".join(t), depth=d) for i, ln, d, t in elements]


def find_index(source: LLMRequest | str, needle: str) -> int:
    """Index of the first element whose own line or own text contains ``needle`` in the LAST browser state.

    Exact-case matches win; otherwise a case-insensitive match is accepted. Raises ``LookupError`` listing the
    elements that were seen when nothing matches.
    """
    elements = find_elements(source)
    for element in elements:
        if element.matches(needle):
            return element.index
    lowered = needle.lower()
    for element in elements:
        if lowered in element.line.lower() or lowered in element.text.lower():
            return element.index
    seen = "; ".join(f"[{e.index}] {e.line} {e.text!r}" for e in elements[:40]) or "no browser_state in the request"
    raise LookupError(f"no interactive element contains {needle!r}; elements: {seen}")
