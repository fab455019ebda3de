"""What the fake LLM provider answers: replies, faults, gates and helpers that build browser-use agent replies.

Anything a test puts into a script is a *reply-like* value:

* a ``dict``: a structured reply (rendered as the tool input / JSON output the request asked for);
* a ``str``: a plain text reply;
* a :class:`Reply` (built with :func:`structured` / :func:`text`) to add usage, delay, thinking, repeats ...;
* a :class:`Fault`;
* a callable ``(LLMRequest) -> reply-like`` (sync or async) that chooses by reading the request.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import sys
import threading
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, NamedTuple, TypeAlias

from tests.fakes.llm_request import LLMRequest, find_index

FOREVER: int = sys.maxsize
"""``times=FOREVER`` makes a script entry (or a fault) repeat for every following request."""

DEFAULT_TEXT = "This is a short reply from the fake LLM provider."
DEFAULT_DONE_TEXT = "Task completed (fake provider default reply)."

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


# --------------------------------------------------------------------------------------------------------------
# browser-use agent replies


def agent_step(
    actions: Mapping[str, Any] | Sequence[Mapping[str, Any]] | None = None,
    *,
    see: str = "The page as described in the browser state.",
    plan: str = "Follow the task step by step.",
    next: str = "Carry out the planned action.",
    thinking: str | None = None,
    evaluation: str = "Success - the previous action worked.",
    memory: str = "Working on the task.",
    next_goal: str | None = None,
    cards: bool = True,
    **extra: Any,
) -> dict[str, Any]:
    """A browser-use AgentOutput dict: ``agent_step([{"click": {"index": 5}}], see=..., plan=..., next=...)``.

    ``cards=False`` leaves out the project's what_i_see / plan_to_goal / next_move fields (stock AgentOutput
    forbids extra keys). ``extra`` adds or overrides top-level fields (e.g. ``current_plan_item=0``).
    """
    if actions is None:
        action_list: list[dict[str, Any]] = []
    elif isinstance(actions, Mapping):
        action_list = [dict(actions)]
    else:
        action_list = [dict(a) for a in actions]
    step: dict[str, Any] = {
        "thinking": thinking,
        "evaluation_previous_goal": evaluation,
        "memory": memory,
        "next_goal": next_goal or next,
        "action": action_list,
    }
    if cards:
        step.update(what_i_see=see, plan_to_goal=plan, next_move=next)
    step.update(extra)
    return step


def done(
    answer: str = DEFAULT_DONE_TEXT, *, success: bool = True, data: Any = None, **step_options: Any
) -> dict[str, Any]:
    """An agent step whose only action is ``done`` (with ``data=`` for an output-model ``done``)."""
    params: dict[str, Any] = {"success": success}
    if data is not None:
        params["data"] = data
    else:
        params["text"] = answer
    step_options.setdefault("next", "Finish the task.")
    return agent_step({"done": params}, **step_options)


def run_code(name: str, code: str | None = None, **step_options: Any) -> dict[str, Any]:
    """An agent step whose only action is ``run_code_file(name, code)``."""
    params: dict[str, Any] = {"name": name}
    if code is not None:
        params["code"] = code
    step_options.setdefault("next", f"Run the script {name}.")
    return agent_step({"run_code_file": params}, **step_options)


def streamed(content: Mapping[str, Any], *, chunk_delay: float, chunk_chars: int = 24, **options: Any) -> Reply:
    """A structured reply that, when the request streams, arrives ``chunk_chars`` characters every
    ``chunk_delay`` seconds (all three wire formats)."""
    return reply(dict(content), chunk_delay=chunk_delay, chunk_chars=chunk_chars, **options)


def click_on(needle: str, **step_options: Any) -> Callable[[LLMRequest], dict[str, Any]]:
    """A reply callable: click the element whose text contains ``needle`` in the current page state."""

    def choose(request: LLMRequest) -> dict[str, Any]:
        step_options.setdefault("next", f"Click {needle!r}.")
        return agent_step({"click": {"index": find_index(request, needle)}}, **step_options)

    return choose


def type_into(needle: str, value: str, **step_options: Any) -> Callable[[LLMRequest], dict[str, Any]]:
    """A reply callable: type ``value`` into the element whose line or text contains ``needle``."""

    def choose(request: LLMRequest) -> dict[str, Any]:
        step_options.setdefault("next", f"Type into {needle!r}.")
        return agent_step({"input": {"index": find_index(request, needle), "text": value}}, **step_options)

    return choose


def navigate(url: str, **step_options: Any) -> dict[str, Any]:
    step_options.setdefault("next", f"Open {url}.")
    return agent_step({"navigate": {"url": url, "new_tab": False}}, **step_options)


# --------------------------------------------------------------------------------------------------------------
# Malformed agent replies: the shapes real models get wrong (take an ``agent_step`` dict, return a reply-like)


def _without_action(step: Mapping[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in step.items() if key != "action"}


def action_as_json_string(step: Mapping[str, Any]) -> dict[str, Any]:
    """``"action": "[{\"navigate\": {...}}]"`` — the list serialised into a string."""
    return {**step, "action": json.dumps(step["action"])}


def single_action_object(step: Mapping[str, Any]) -> dict[str, Any]:
    """``"action": {"navigate": {...}}`` — the first action object instead of a list."""
    return {**step, "action": step["action"][0]}


def action_leaked(step: Mapping[str, Any], into: str = "memory") -> dict[str, Any]:
    """No ``action``; the list is written into the text of another field as ``"action": [...]``."""
    leaked = f'{step.get(into) or "Next I act."} {{"action": {json.dumps(step["action"])}}}'
    return {**_without_action(step), into: leaked}


def action_as_top_level_keys(step: Mapping[str, Any]) -> dict[str, Any]:
    """No ``action``; each action object's key sits at the top level of the reply."""
    result = _without_action(step)
    for item in step["action"]:
        result.update(item)
    return result


def missing_action(step: Mapping[str, Any]) -> dict[str, Any]:
    """The narrative without any ``action``."""
    return _without_action(step)


def blank_cards(step: Mapping[str, Any]) -> dict[str, Any]:
    """Every narrative field empty, the actions intact."""
    narrative = ("what_i_see", "plan_to_goal", "next_move", "evaluation_previous_goal", "memory", "next_goal")
    return {**step, **dict.fromkeys((key for key in narrative if key in step), "")}


def list_argument_as_string(step: Mapping[str, Any]) -> dict[str, Any]:
    """Every list-valued action argument sent as a JSON string (``"files_to_display": "[]"``)."""
    actions = [
        {name: {k: json.dumps(v) if isinstance(v, list) else v for k, v in (params or {}).items()}}
        for item in step["action"]
        for name, params in item.items()
    ]
    return {**step, "action": actions}


def split_tool_calls(step: Mapping[str, Any]) -> Reply:
    """The reply split in two: the narrative, then the actions (Anthropic: two parallel ``tool_use`` blocks)."""
    narrative = _without_action(step)
    return Reply(content=dict(step), parts=(narrative, {"action": list(step["action"])}))


def action_in_thinking_block(step: Mapping[str, Any]) -> Reply:
    """No ``action``; the list written into the extended-thinking block (Anthropic) / reasoning summary."""
    return Reply(content=_without_action(step), thinking=f'I will act now. "action": {json.dumps(step["action"])}')


# --------------------------------------------------------------------------------------------------------------
# Default replies: a minimal valid instance of whatever schema was requested


def _resolve(schema: dict[str, Any], root: dict[str, Any]) -> dict[str, Any]:
    seen = 0
    while "$ref" in schema and seen < 32:
        target: Any = root
        for part in str(schema["$ref"]).lstrip("#/").split("/"):
            target = target.get(part, {}) if isinstance(target, dict) else {}
        schema = target if isinstance(target, dict) else {}
        seen += 1
    return schema


def example_for_schema(schema: dict[str, Any], root: dict[str, Any] | None = None, name: str = "") -> Any:
    """A small value that validates against a JSON schema (defaults, first enum, first non-null variant ...)."""
    root = root if root is not None else schema
    schema = _resolve(schema, root)
    if "default" in schema:
        return schema["default"]
    if "const" in schema:
        return schema["const"]
    if schema.get("enum"):
        return schema["enum"][0]
    for key in ("anyOf", "oneOf"):
        variants = [_resolve(v, root) for v in schema.get(key, [])]
        if any(v.get("type") == "null" for v in variants):
            return None
        if variants:
            return example_for_schema(variants[0], root, name)
    if schema.get("allOf"):
        merged: dict[str, Any] = {}
        for part in schema["allOf"]:
            merged.update(_resolve(part, root))
        return example_for_schema(merged, root, name)
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind == "object" or "properties" in schema:
        props: dict[str, Any] = schema.get("properties", {})
        return {key: example_for_schema(props.get(key, {}), root, key) for key in schema.get("required", [])}
    if kind == "array":
        count = int(schema.get("minItems", 0))
        return [example_for_schema(schema.get("items", {}), root, name) for _ in range(count)]
    if kind == "integer":
        return int(schema.get("minimum", 0))
    if kind == "number":
        return float(schema.get("minimum", 0))
    if kind == "boolean":
        return True
    if kind == "null":
        return None
    return DEFAULT_DONE_TEXT if name == "text" else f"fake {name or 'value'}"


def default_agent_step(schema: dict[str, Any] | None) -> dict[str, Any]:
    """A ``done`` step fitted to the request's AgentOutput schema (or the project's default shape)."""
    if not schema:
        return done()
    step: dict[str, Any] = example_for_schema(schema)
    step["action"] = [_done_action(schema)]
    return step


def _done_action(schema: dict[str, Any]) -> dict[str, Any]:
    items = _resolve(_resolve(schema.get("properties", {}).get("action", {}), schema).get("items", {}), schema)
    for variant in items.get("anyOf", []) + items.get("oneOf", []):
        variant = _resolve(variant, schema)
        params_schema = variant.get("properties", {}).get("done")
        if params_schema is not None:
            params = example_for_schema(params_schema, schema, "done")
            if isinstance(params, dict):
                params["success"] = True
                if "text" in params:
                    params["text"] = DEFAULT_DONE_TEXT
            return {"done": params}
    return {"done": {"text": DEFAULT_DONE_TEXT, "success": True}}


def verdict(passed: bool = True, reason: str = "", *, reasoning: str | None = None) -> dict[str, Any]:
    """A reviewer (judge) reply: ``verdict(False, "add the salaries")`` asks for changes."""
    said = reasoning if reasoning is not None else ("The result matches the task." if passed else reason)
    return {"verdict": passed, "reasoning": said, "failureReason": "" if passed else reason}


def is_review(request: LLMRequest) -> bool:
    """Predicate for ``script(when=...)``: the reviewer's judge call."""
    return request.is_review


def default_reply(request: LLMRequest) -> dict[str, Any] | str:
    """What an unscripted request gets: a ``done`` step for agent steps, a schema example for other structured
    requests, and a short sentence for text requests."""
    if request.is_agent_step:
        return default_agent_step(request.schema)
    if request.is_review:
        return verdict(True)
    if request.schema is not None:
        value = example_for_schema(request.schema)
        return value if isinstance(value, dict) else {"value": value}
    if request.schema_name is not None:  # json_object without a schema
        return {"answer": DEFAULT_TEXT}
    return DEFAULT_TEXT
