"""How a turn ends (spec §13.7, §13.8, §15): its outcome, the completion row, and the output that stands.

The driver decides *that* the turn ended (a done, steps run out, the cost cap, a fatal error); this turns
each ending into a ``TurnOutcome`` and writes the row that closes the turn in the feed.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Sequence
from typing import Any

from browser_use.llm.base import BaseChatModel

from openbrowse.agent.preflight import collapse
from openbrowse.agent.structured.output import StructuredOutput
from openbrowse.agent.structured.reformat import reformat_once
from openbrowse.agent.turns.feed import RunFeed
from openbrowse.agent.turns.history import TurnHistory
from openbrowse.agent.turns.outcome import clip_output, completed, count_recovered, not_completed
from openbrowse.domain.failures import Failure, FailureKind
from openbrowse.domain.feed import FeedEntry, MessageType
from openbrowse.domain.runs import Salvage, TurnEnding, TurnOutcome
from openbrowse.llm.failures import classify

logger = logging.getLogger(__name__)


def is_unusable_reply(error: BaseException | None) -> bool:
    return error is not None and classify(error).kind is FailureKind.INVALID_OUTPUT


class TurnEnd:
    def __init__(
        self,
        feed: RunFeed,
        structured: StructuredOutput,
        history: TurnHistory,
        *,
        output_schema: dict[str, Any] | None,
        judge_llm: BaseChatModel | None,
    ) -> None:
        self._feed = feed
        self._structured = structured
        self._history = history
        self._output_schema = output_schema
        self._judge_llm = judge_llm

    async def finished(
        self, *, step_errors: Sequence[str | None], out_of_steps: bool, last_error: BaseException | None
    ) -> TurnOutcome:
        """The agent stopped by itself: with a done, or without one (steps ran out, replies stayed unusable).

        ``step_errors`` holds one entry per step of the turn (None for a step without error).
        """
        done = self._history.last_done()
        if done is not None:
            text = done.extracted_content or ""
            structured = self._structured.structured_result(text) if done.success else None
            if structured is not None and not structured[1] and self._structured.prose:
                structured = await self._reformat(self._structured.review_text(text), structured)
            outcome = completed(
                text=self._structured.text_output(text) if done.success else text,
                agent_success=done.success,
                schema=self._output_schema,
                structured=structured,
                recovered=count_recovered(step_errors[:-1]),
            )
            if not done.success:
                outcome = dataclasses.replace(outcome, output=self._structured.failed_output(text))
        elif (salvaged := await self.store_complete()) is not None:
            return salvaged
        else:
            outcome = not_completed(out_of_steps=out_of_steps, unusable_replies=is_unusable_reply(last_error))
            outcome = dataclasses.replace(outcome, output=self._structured.failed_output(""))
        await self._completion(outcome.summary, outcome.output)
        return outcome

    async def provider_gave_up(self, cause: BaseException) -> TurnOutcome:
        """The provider kept failing: a schema-valid store still stands when the replies were only unusable."""
        salvaged = await self.store_complete() if is_unusable_reply(cause) else None
        return salvaged or await self.fatal(cause)

    async def budget(self, reason: str) -> TurnOutcome:
        """The cost cap stopped the turn: it keeps what the salvage finds."""
        salvage = self.salvage()
        summary = f"Stopped: {reason}. {salvage.kept}"
        await self._completion(summary, salvage.output)
        return TurnOutcome(
            ending=TurnEnding.BUDGET,
            summary=summary,
            output=salvage.output,
            is_task_successful=salvage.is_task_successful,
            failure=Failure(FailureKind.BUDGET_EXCEEDED),
            release_browser=True,
        )

    async def fatal(self, exc: BaseException) -> TurnOutcome:
        failure = classify(exc)
        message = collapse(str(exc)) or type(exc).__name__
        logger.warning("Turn of session %s failed: %s", self._feed.session_id, message)
        await self._feed.append(
            FeedEntry(
                MessageType.BROWSER_ACTION_ERROR,
                f"Fatal error: {message[:200]}",
                {"errorFull": message[:6000], "traceback": f"{type(exc).__name__}: {message}"[:6000]},
            ),
        )
        return TurnOutcome(
            ending=TurnEnding.ERROR,
            summary=f"Fatal error: {message[:300]}",
            output=self._structured.failed_output(""),  # what the store gathered, never a success
            is_task_successful=False,
            failure=failure,
            release_browser=True,
        )

    async def store_complete(self) -> TurnOutcome | None:
        """§13.7: the turn ended without done (steps exhausted, unusable replies) but the store is schema-valid."""
        complete = self._structured.store_complete()
        if complete is None:
            return None
        output, gate_passed = complete
        await self._feed.judge(
            "storeComplete",
            "Run ended without done, but the output store is schema-valid — recorded as delivered",
            {"gatePassed": gate_passed},
        )
        summary = "Run ended without done; the output store was schema-valid, so it stands as the answer."
        await self._completion(summary, output)
        return TurnOutcome(ending=TurnEnding.FINISHED, summary=summary, output=output, is_task_successful=True)

    def salvage(self) -> Salvage:
        """What an interrupted turn keeps (spec §13.8): the store when non-empty, else the agent's result.json,
        else (stopped while its done was under review) that done's output."""
        done = self._history.last_done()
        reached = done.extracted_content if done is not None and done.success else None
        return self._structured.salvage(reached)

    async def _completion(self, summary: str, output: Any) -> None:
        await self._feed.append(FeedEntry(MessageType.COMPLETION, summary, {"output": clip_output(output)}))

    async def _reformat(self, text: str, structured: tuple[Any, bool]) -> tuple[Any, bool]:
        """Prose mode: one reformat call when the done text does not validate (its cost counts)."""
        if self._judge_llm is None or self._output_schema is None:
            return structured
        value, valid = await reformat_once(self._judge_llm, text, self._output_schema)
        return (value, True) if valid else structured
