"""What the fake LLM provider answers: scripts of replies for the requests that match them.

Anything a test puts into a script is a *reply-like* value:

* a ``dict``: a structured reply (rendered as the tool input / JSON output the request asked for);
* a ``str``: a plain text reply;
* a :class:`Reply` (built with :func:`structured` / :func:`text`) to add usage, delay, thinking, repeats ...;
* a :class:`Fault`;
* a callable ``(LLMRequest) -> reply-like`` (sync or async) that chooses by reading the request.

The vocabulary lives in :mod:`~tests.fakes.llm_reply` (replies, faults, gates), :mod:`~tests.fakes.llm_agent_steps`
(browser-use agent replies) and :mod:`~tests.fakes.llm_defaults` (what unscripted requests get); it is all
importable from here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tests.fakes.llm_agent_steps import (
    DEFAULT_DONE_TEXT,
    action_as_json_string,
    action_as_top_level_keys,
    action_in_thinking_block,
    action_leaked,
    agent_step,
    blank_cards,
    click_on,
    done,
    is_review,
    list_argument_as_string,
    missing_action,
    navigate,
    run_code,
    single_action_object,
    split_tool_calls,
    type_into,
    verdict,
)
from tests.fakes.llm_defaults import DEFAULT_TEXT, default_agent_step, default_reply, example_for_schema
from tests.fakes.llm_reply import (
    FOREVER,
    Fault,
    FaultKind,
    Gate,
    MalformedMode,
    Reply,
    ReplyLike,
    Usage,
    UsageLike,
    coerce,
    entry_times,
    reply,
    streamed,
    structured,
    text,
)

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from tests.fakes.llm_request import Api, LLMRequest

__all__ = [
    "DEFAULT_DONE_TEXT",
    "DEFAULT_TEXT",
    "FOREVER",
    "Fault",
    "FaultKind",
    "Gate",
    "MalformedMode",
    "Reply",
    "ReplyLike",
    "Script",
    "Usage",
    "UsageLike",
    "action_as_json_string",
    "action_as_top_level_keys",
    "action_in_thinking_block",
    "action_leaked",
    "agent_step",
    "blank_cards",
    "click_on",
    "coerce",
    "default_agent_step",
    "default_reply",
    "done",
    "entry_times",
    "example_for_schema",
    "is_agent_step",
    "is_review",
    "is_text_request",
    "list_argument_as_string",
    "missing_action",
    "navigate",
    "reply",
    "run_code",
    "single_action_object",
    "split_tool_calls",
    "streamed",
    "structured",
    "text",
    "type_into",
    "verdict",
]


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
