"""The usage meter: a chat-model wrapper that reports every call's usage and cost.

``MeteredChatModel`` is itself a browser-use ``BaseChatModel``, so the same object can be handed to the
``Agent`` as ``llm`` (and as judge/extraction/compaction model) and to our own pre-flight, judge and reformat
calls: everything that goes through it is counted, and nothing else needs to remember to count.

Failed calls: a provider that billed a request whose reply we then rejected (truncated, unparseable) still
costs money. Our clients attach the reported usage to the exception they raise (:func:`attach_usage`); the
meter finds it along the ``__cause__`` chain (:func:`attached_usage`) and reports it
with ``failed=True`` before re-raising.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, TypeVar

from browser_use.llm.views import ChatInvokeUsage
from pydantic import BaseModel

from openbrowse.llm.chat_model import ChatModelWrapper
from openbrowse.llm.redacted_messages import Redact, redact_messages
from openbrowse.llm.usage.costs import CallUsage, call_usage

if TYPE_CHECKING:
    from collections.abc import Callable

    from browser_use.llm.base import BaseChatModel
    from browser_use.llm.messages import BaseMessage
    from browser_use.llm.views import ChatInvokeCompletion

    from openbrowse.llm.catalog import ModelSpec

logger = logging.getLogger(__name__)

T = TypeVar("T", bound=BaseModel)

_USAGE_ATTR = "openbrowse_usage"


def attach_usage(exc: BaseException, usage: ChatInvokeUsage | None) -> None:
    """Record on ``exc`` the usage the provider reported for the call that is failing."""
    if usage is not None:
        setattr(exc, _USAGE_ATTR, usage)


def attached_usage(exc: BaseException) -> ChatInvokeUsage | None:
    """The usage attached to ``exc`` or to an exception it was raised *from* (``__cause__`` only: an implicit
    ``__context__`` may be an earlier, already-reported call's failure)."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        usage = getattr(current, _USAGE_ATTR, None)
        if isinstance(usage, ChatInvokeUsage):
            return usage
        current = current.__cause__
    return None


def sum_usage(first: ChatInvokeUsage | None, second: ChatInvokeUsage | None) -> ChatInvokeUsage | None:
    """Usage of two requests that together made one call (e.g. a truncated reply and its retry)."""
    if first is None or second is None:
        return second or first

    def add(a: int | None, b: int | None) -> int | None:
        return None if a is None and b is None else (a or 0) + (b or 0)

    return ChatInvokeUsage(
        prompt_tokens=first.prompt_tokens + second.prompt_tokens,
        prompt_cached_tokens=add(first.prompt_cached_tokens, second.prompt_cached_tokens),
        prompt_cache_creation_tokens=add(first.prompt_cache_creation_tokens, second.prompt_cache_creation_tokens),
        prompt_cache_creation_5m_tokens=add(
            first.prompt_cache_creation_5m_tokens, second.prompt_cache_creation_5m_tokens
        ),
        prompt_cache_creation_1h_tokens=add(
            first.prompt_cache_creation_1h_tokens, second.prompt_cache_creation_1h_tokens
        ),
        prompt_image_tokens=add(first.prompt_image_tokens, second.prompt_image_tokens),
        completion_tokens=first.completion_tokens + second.completion_tokens,
        total_tokens=first.total_tokens + second.total_tokens,
        pricing_multiplier=second.pricing_multiplier,
    )


class MeteredChatModel(ChatModelWrapper):
    """Wraps a chat model; calls ``on_usage(CallUsage)`` after every call that reported usage.

    ``label`` tags the reports (``agent``, ``preflight``, ``judge``…); :meth:`labelled` makes a sibling
    wrapper over the same inner model with another label.
    """

    def __init__(
        self,
        inner: BaseChatModel,
        spec: ModelSpec,
        on_usage: Callable[[CallUsage], None],
        *,
        label: str | None = None,
        redact: Redact | None = None,
    ) -> None:
        super().__init__(inner)
        self.spec = spec
        self.on_usage = on_usage
        self.label = label
        self.redact = redact  # the session's redactor: no secret reaches the provider in any spelling (§25.3)

    def labelled(self, label: str) -> MeteredChatModel:
        return MeteredChatModel(self.inner, self.spec, self.on_usage, label=label, redact=self.redact)

    def _report(self, usage: ChatInvokeUsage, *, failed: bool) -> None:
        try:
            self.on_usage(call_usage(self.spec, usage, failed=failed, label=self.label))
        except Exception:
            logger.exception("Usage callback failed for a %s call", self.spec.id)

    async def _complete(
        self, messages: list[BaseMessage], output_format: type[T] | None, **kwargs: Any
    ) -> ChatInvokeCompletion[T] | ChatInvokeCompletion[str]:
        if self.redact is not None:
            messages = redact_messages(messages, self.redact)
        try:
            result = await self._call_inner(messages, output_format, **kwargs)
        except Exception as exc:
            usage = attached_usage(exc)
            if usage is not None:
                self._report(usage, failed=True)
            raise
        if result.usage is not None:
            self._report(result.usage, failed=False)
        return result
