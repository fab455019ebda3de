"""The reviewer (spec §14): a judge call after a successful-looking ``done``, and the change-request rounds.

The judge is one LLM call on the session's model at its default effort; it sees the task, the goal, the done
text (with the structured output block) and the last steps' summaries, and answers ``{verdict, reasoning,
failureReason}``. A request for changes re-enters the agent as a continuation turn; an unchanged answer counts
as a pushback, and after two the message demands the changes. At most three change rounds. The verdict never
changes ``isTaskSuccessful``: it is reported (``judge`` events, a dissent note), not enforced.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from browser_use.llm.base import BaseChatModel
from browser_use.llm.messages import BaseMessage, SystemMessage, UserMessage
from pydantic import BaseModel

logger = logging.getLogger(__name__)

REVIEW_MARKER = "OPENBROWSE-REVIEW"
MAX_ROUNDS = 3
PUSHBACKS_ALLOWED = 2
REASON_LIMIT = 4000
STEPS_SHOWN = 12
DONE_TEXT_LIMIT = 12000
NO_ACTIVITY = (
    "Review round produced no agent activity — stopping the review conversation and recording the standing verdict"
)
JUDGE_INSTRUCTIONS = (
    f"[{REVIEW_MARKER}] You review the result of a browser agent. Judge whether the final answer delivers what "
    "the task and its goal ask for, using only the task, the answer and the steps shown. verdict=true when the "
    "result is complete and correct as far as you can tell; verdict=false when something requested is missing, "
    "wrong or made up: then failureReason says concretely what to change. reasoning is one or two sentences."
)


class JudgeVerdict(BaseModel):
    verdict: bool
    reasoning: str = ""
    failureReason: str = ""

    @property
    def reason(self) -> str:
        return (self.failureReason or self.reasoning or "the result does not meet the task").strip()


@dataclass(frozen=True, slots=True)
class ReviewContext:
    task: str
    goal: str
    done_text: Callable[[], str]
    steps: Callable[[], Sequence[str]]
    answer: Callable[[], str]
    """The answer as it stands (store content, or the done text without a store): unchanged = pushback."""


@dataclass(frozen=True, slots=True)
class RoundResult:
    steps: int
    done_ok: bool


EmitData = Callable[[str, str, dict[str, Any]], Awaitable[None]]
Resume = Callable[[str], Awaitable[RoundResult]]


def judge_messages(task: str, goal: str, done_text: str, steps: Sequence[str]) -> list[BaseMessage]:
    shown = "\n".join(f"- {s}" for s in list(steps)[-STEPS_SHOWN:]) or "- (none)"
    body = (
        f"TASK:\n{task}\n\nGOAL: {goal}\n\nFINAL ANSWER (the agent's done text):\n{done_text[:DONE_TEXT_LIMIT]}\n\n"
        f"LAST STEPS:\n{shown}"
    )
    return [SystemMessage(content=JUDGE_INSTRUCTIONS), UserMessage(content=body)]


def changes_message(reason: str, pushbacks: int) -> str:
    if pushbacks >= PUSHBACKS_ALLOWED:
        return (
            f"a reviewer requests changes: {reason}; you have already replied twice without changing the answer, "
            "so apply the changes now and call done again; where the source does not publish something, state "
            "explicitly what it does not publish (mark_absent with the reason)"
        )
    remaining = PUSHBACKS_ALLOWED - pushbacks
    return (
        f"a reviewer requests changes: {reason}; apply them and call done again, or, if confident the review is "
        f"wrong, reply via done explaining why ({remaining} replies remaining)"
    )


class Reviewer:
    def __init__(self, llm: BaseChatModel, emit: EmitData) -> None:
        self._llm = llm
        self._emit = emit
        self.last_verdict: bool | None = None

    async def judge(self, context: ReviewContext) -> JudgeVerdict | None:
        started = time.monotonic()
        messages = judge_messages(context.task, context.goal, context.done_text(), context.steps())
        try:
            reply = await self._llm.ainvoke(messages, output_format=JudgeVerdict)
        except Exception as exc:
            logger.warning("The reviewer call failed (%s: %s); the result stands unreviewed", type(exc).__name__, exc)
            return None
        finally:
            logger.info("Reviewer call took %.3f s", time.monotonic() - started)
        completion = reply.completion
        return completion if isinstance(completion, JudgeVerdict) else None

    async def review(self, context: ReviewContext, resume: Resume) -> bool | None:
        """Review rounds until a pass, a stop, or the round limit; returns the last verdict (None if none)."""
        self.last_verdict = None
        pushbacks = 0
        for round_number in range(MAX_ROUNDS + 1):
            verdict = await self.judge(context)
            if verdict is None:
                return self.last_verdict
            self.last_verdict = verdict.verdict
            if verdict.verdict:
                await self._emit(
                    "review",
                    f"Reviewer accepted the result: {verdict.reasoning.strip()[:200]}",
                    {"verdict": "pass", "round": round_number, "reasoning": verdict.reasoning[:REASON_LIMIT]},
                )
                return True
            reason = verdict.reason[:REASON_LIMIT]
            await self._emit(
                "review",
                reason,
                {"verdict": "changes", "round": round_number, "reasoning": verdict.reasoning[:REASON_LIMIT]},
            )
            if round_number == MAX_ROUNDS:
                return False
            before = context.answer()
            result = await resume(changes_message(reason, pushbacks))
            if result.steps == 0:
                await self._emit("review", NO_ACTIVITY, {"verdict": "changes", "round": round_number})
                return False
            if not result.done_ok:
                return False
            if context.answer() == before:
                pushbacks += 1
        return self.last_verdict


def dissent(last_verdict: bool | None, recorded: bool | None) -> dict[str, str] | None:
    """The dissent note's data when the judge's last verdict differs from the recorded outcome."""
    if last_verdict is None or recorded is None or last_verdict == recorded:
        return None
    return {"verdict": "PASS" if last_verdict else "FAIL", "recorded": "success" if recorded else "failure"}
