"""The model as the agent sees it: cards in the schema, the goal reminder, and a record of every call.

``AgentChatModel`` wraps the session's chat model. For agent steps (``output_format`` a browser-use ``AgentOutput``) it
swaps in the card-carrying subclass, appends the periodic ``GOAL:`` reminder, repairs unusable replies
(``repair``: at most two corrective retries per step), and tells its observer what came
back (reasoning text, duration) or what failed, so the turn can surface persistent provider faults quickly.
With a :class:`~openbrowse.agent.code.stream.CodeStreamer`, agent calls stream and the streamer watches the reply
for a ``run_code_file`` action (spec §11.3); the streamer learns the parsed reply before browser-use runs it.
Every other call (compaction, extraction, judge) passes through untouched.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from browser_use.llm.base import BaseChatModel
from browser_use.llm.messages import BaseMessage, UserMessage
from browser_use.llm.views import ChatInvokeCompletion
from pydantic import BaseModel

from openbrowse.agent.replies.cards import with_cards
from openbrowse.agent.replies.repair import invoke_with_repair
from openbrowse.agent.turns.pause import PauseSwitch
from openbrowse.domain.activity import NO_ACTIVITY, ActivityKind, ActivityReporter
from openbrowse.llm.chat_model import ChatModelWrapper
from openbrowse.llm.replies.streaming import listening
from openbrowse.upstream.agent_output import is_agent_output

if TYPE_CHECKING:
    from openbrowse.agent.code.stream import CodeStreamer

T = TypeVar("T", bound=BaseModel)

GOAL_REMINDER_EVERY = 10


@dataclass(slots=True)
class CallRecord:
    """The last agent call: when it ended, what the model reasoned, or how it failed."""

    duration: float = 0.0
    thinking: str | None = None
    error: BaseException | None = None


@dataclass(slots=True)
class AgentCallLog:
    """What the turn needs to know about agent calls since it last looked."""

    goal: str = ""
    step: int = 0
    calls: list[CallRecord] = field(default_factory=list)
    consecutive_errors: int = 0
    last_error: BaseException | None = None

    def take(self) -> list[CallRecord]:
        calls, self.calls = self.calls, []
        return calls

    def reminder_due(self) -> bool:
        return bool(self.goal) and self.step > 1 and (self.step - 1) % GOAL_REMINDER_EVERY == 0


class AgentChatModel(ChatModelWrapper):
    """A transparent wrapper; browser-use accepts it as ``llm``."""

    def __init__(
        self,
        inner: BaseChatModel,
        log: AgentCallLog,
        activity: ActivityReporter = NO_ACTIVITY,
        code: CodeStreamer | None = None,
        pause: PauseSwitch | None = None,
    ) -> None:
        super().__init__(inner)
        self.log = log
        self._activity = activity
        self._code = code
        self._pause = pause or PauseSwitch()

    @property
    def model_name(self) -> str:
        return self.inner.model

    async def _complete(
        self, messages: list[BaseMessage], output_format: type[T] | None, **kwargs: Any
    ) -> ChatInvokeCompletion[T] | ChatInvokeCompletion[str]:
        if output_format is None or not is_agent_output(output_format):
            return await self._call_inner(messages, output_format, **kwargs)
        resumed = self._pause.take_note()
        if resumed:
            messages = [*messages, UserMessage(content=resumed)]
        if self.log.reminder_due():
            reminder = f"GOAL: {self.log.goal} Not done until this is met."
            messages = [*messages, UserMessage(content=reminder)]
        started = time.monotonic()
        self._activity.begin("Reasoning", ActivityKind.REASONING, step=self.log.step)
        code = self._code
        if code is not None:
            code.begin_reply()
        try:
            with listening(code):
                result = await self._pause.race(
                    invoke_with_repair(self.inner, messages, with_cards(output_format), **kwargs)
                )
        except BaseException as exc:
            if code is not None:
                await code.reply_failed()
            if not isinstance(exc, Exception) or isinstance(exc, InterruptedError):  # a pause is no model failure
                if isinstance(exc, InterruptedError) and resumed:
                    self._pause.keep_note(resumed)  # the redone step carries the note again
                raise
            self.log.consecutive_errors += 1
            self.log.last_error = exc
            self.log.calls.append(CallRecord(duration=time.monotonic() - started, error=exc))
            raise
        if code is not None:
            await code.reply_finished(result.completion)
        self.log.consecutive_errors = 0
        self.log.last_error = None
        self.log.calls.append(CallRecord(duration=time.monotonic() - started, thinking=result.thinking))
        self._activity.begin("Running actions", ActivityKind.ACTIONS, step=self.log.step)
        return result  # type: ignore[return-value]
