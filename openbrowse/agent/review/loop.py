"""The review around a turn (spec §14): judge a successful-looking done, resume the agent with change requests,
and note when the last verdict differs from the recorded outcome.

The judge and its rounds are ``reviewer.py``; this binds them to the running agent, the answer as it stands
and the feed. A review round is more agent steps: the driver passes how to run them and its cost-cap check.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from browser_use import Agent
from browser_use.llm.base import BaseChatModel

from openbrowse.agent.preflight import collapse
from openbrowse.agent.review.reviewer import ReviewContext, Reviewer, RoundResult, dissent
from openbrowse.agent.structured.output import StructuredOutput
from openbrowse.agent.turns.feed import RunFeed
from openbrowse.agent.turns.history import TurnHistory
from openbrowse.domain.runs import TurnOutcome

logger = logging.getLogger(__name__)


class ReviewLoop:
    def __init__(
        self, judge_llm: BaseChatModel | None, feed: RunFeed, structured: StructuredOutput, history: TurnHistory
    ) -> None:
        self._reviewer = Reviewer(judge_llm, feed.judge) if judge_llm is not None else None
        self._feed = feed
        self._structured = structured
        self._history = history
        self.baseline: str | None = None
        """The answer as the latest change request found it (None before one): a done after it either
        resubmits a changed answer or replies with the same one."""

    def new_turn(self) -> None:
        self.baseline = None
        if self._reviewer is not None:
            self._reviewer.last_verdict = None

    async def review(
        self,
        agent: Agent[Any, Any],
        *,
        task: str,
        goal: str,
        step_summaries: Sequence[str],
        before_round: Callable[[], Awaitable[None]],
        run_round: Callable[[], Awaitable[object]],
    ) -> None:
        """Review the turn's done when it reports success; change requests re-enter ``agent`` as continuations.

        ``step_summaries`` is the turn's list of step summaries, which grows while the rounds run;
        ``before_round`` raises to refuse a further round (the cost cap), ``run_round`` runs the agent's steps.
        """
        done = self._history.last_done()
        if self._reviewer is None or done is None or not done.success:
            return

        async def resume(message: str) -> RoundResult:
            await before_round()
            self.baseline = self._structured.answer_snapshot(self._history.last_done_text())
            before = len(agent.history.history)
            agent.add_new_task(message)
            await run_round()
            latest = self._history.last_done()
            fresh = any(r.is_done for item in agent.history.history[before:] for r in item.result)
            steps = len(agent.history.history) - before
            return RoundResult(steps=steps, done_ok=bool(fresh and latest is not None and latest.success))

        context = ReviewContext(
            task=task,
            goal=goal,
            done_text=lambda: self._structured.review_text(self._history.last_done_text()),
            steps=lambda: list(step_summaries),
            answer=lambda: self._structured.answer_snapshot(self._history.last_done_text()),
        )
        await self._reviewer.review(context, resume)

    async def failed(self, cause: BaseException) -> None:
        """A review round raised: the review stops and the done already reached stands."""
        message = collapse(str(cause)) or type(cause).__name__
        logger.warning("A review round of session %s failed: %s", self._feed.session_id, message)
        await self._feed.judge(
            "review",
            f"Review round failed ({message[:200]}) — stopping the review and recording the standing result",
            {"verdict": "error", "error": message[:2000]},
        )

    async def dissent(self, outcome: TurnOutcome) -> None:
        """A ``dissent`` event when the reviewer's last verdict differs from the recorded outcome."""
        if self._reviewer is None:
            return
        note = dissent(self._reviewer.last_verdict, outcome.is_task_successful)
        if note is not None:
            await self._feed.judge(
                "dissent",
                f"Reviewer's last verdict ({note['verdict']}) differs from the recorded outcome ({note['recorded']})",
                note,
            )
