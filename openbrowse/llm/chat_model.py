"""browser-use's chat-model protocol, written out once for every model and wrapper we hand to an ``Agent``.

browser-use's ``BaseChatModel`` is a ``Protocol`` whose ``ainvoke`` is overloaded (``output_format=None`` gives a
``ChatInvokeCompletion[str]``, a model class gives a completion of that class). :class:`ChatModel` spells the
overloads once and routes every call to :meth:`ChatModel._complete`, the one method a model implements.
:class:`ChatModelWrapper` adds what a wrapper around another model needs: the inner model's identity and a call
through to it that keeps the overload's types.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeVar, overload

from browser_use.llm.base import BaseChatModel
from pydantic import BaseModel

if TYPE_CHECKING:
    from browser_use.llm.messages import BaseMessage
    from browser_use.llm.views import ChatInvokeCompletion

T = TypeVar("T", bound=BaseModel)


class ChatModel(BaseChatModel):
    """A browser-use chat model whose calls all arrive at :meth:`_complete`; ``name`` is the model id."""

    model: str

    @property
    def name(self) -> str:
        return str(self.model)

    @overload
    async def ainvoke(
        self, messages: list[BaseMessage], output_format: None = None, **kwargs: Any
    ) -> ChatInvokeCompletion[str]: ...

    @overload
    async def ainvoke(
        self, messages: list[BaseMessage], output_format: type[T], **kwargs: Any
    ) -> ChatInvokeCompletion[T]: ...

    async def ainvoke(
        self, messages: list[BaseMessage], output_format: type[T] | None = None, **kwargs: Any
    ) -> ChatInvokeCompletion[T] | ChatInvokeCompletion[str]:
        return await self._complete(messages, output_format, **kwargs)

    async def _complete(
        self, messages: list[BaseMessage], output_format: type[T] | None, **kwargs: Any
    ) -> ChatInvokeCompletion[T] | ChatInvokeCompletion[str]:
        """One call: a text completion when ``output_format`` is None, else one parsed into it."""
        raise NotImplementedError


class ChatModelWrapper(ChatModel):
    """A model that adds behaviour around ``inner`` and otherwise presents itself as ``inner``."""

    def __init__(self, inner: BaseChatModel) -> None:
        self.inner = inner
        self.model = inner.model

    @property
    def provider(self) -> str:
        return self.inner.provider

    @property
    def name(self) -> str:
        return self.inner.name

    async def _call_inner(
        self, messages: list[BaseMessage], output_format: type[T] | None, **kwargs: Any
    ) -> ChatInvokeCompletion[T] | ChatInvokeCompletion[str]:
        # Two calls because neither overload of ``ainvoke`` accepts ``type[T] | None``.
        if output_format is None:
            return await self.inner.ainvoke(messages, None, **kwargs)
        return await self.inner.ainvoke(messages, output_format, **kwargs)

    async def _complete(
        self, messages: list[BaseMessage], output_format: type[T] | None, **kwargs: Any
    ) -> ChatInvokeCompletion[T] | ChatInvokeCompletion[str]:
        return await self._call_inner(messages, output_format, **kwargs)
