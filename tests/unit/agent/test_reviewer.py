"""The reviewer (spec §14): the continuation wording, pushback escalation, the dissent note, the round loop."""

from __future__ import annotations

from typing import Any

from browser_use.llm.base import BaseChatModel
from browser_use.llm.views import ChatInvokeCompletion

from openbrowse.agent.review.reviewer import (
    JudgeVerdict,
    ReviewContext,
    Reviewer,
    RoundResult,
    changes_message,
    dissent,
    judge_messages,
)


def test_change_request_wording_counts_down_replies() -> None:
    assert changes_message("add the salaries", 0) == (
        "a reviewer requests changes: add the salaries; apply them and call done again, or, if confident the "
        "review is wrong, reply via done explaining why (2 replies remaining)"
    )
    assert changes_message("add the salaries", 1).endswith("(1 replies remaining)")


def test_after_two_pushbacks_the_message_demands_the_changes() -> None:
    message = changes_message("add the salaries", 2)
    assert message.startswith("a reviewer requests changes: add the salaries; you have already replied twice")
    assert "state explicitly what it does not publish" in message and "replies remaining" not in message


def test_dissent_only_when_the_last_verdict_differs() -> None:
    assert dissent(False, True) == {"verdict": "FAIL", "recorded": "success"}
    assert dissent(True, False) == {"verdict": "PASS", "recorded": "failure"}
    assert dissent(True, True) is None and dissent(None, True) is None


def test_judge_sees_task_goal_answer_and_recent_steps() -> None:
    system, user = judge_messages("Find jobs", "All jobs listed", "STRUCTURED OUTPUT ...", [f"s{i}" for i in range(20)])
    assert "OPENBROWSE-REVIEW" in str(system.content)
    body = str(user.content)
    assert "TASK:\nFind jobs" in body and "GOAL: All jobs listed" in body and "STRUCTURED OUTPUT" in body
    assert "- s19" in body and "- s7" not in body  # the last twelve steps
    assert JudgeVerdict(verdict=False, reasoning="r").reason == "r"


class ScriptedJudge(BaseChatModel):
    """A judge that answers verdicts in order and counts its calls."""

    model = "judge"

    def __init__(self, verdicts: list[bool]) -> None:
        self.verdicts = list(verdicts)
        self.calls = 0

    @property
    def provider(self) -> str:
        return "test"

    @property
    def name(self) -> str:
        return "judge"

    @property
    def model_name(self) -> str:
        return "judge"

    async def ainvoke(self, messages: Any, output_format: Any = None, **kwargs: Any) -> Any:
        self.calls += 1
        passed = self.verdicts.pop(0)
        return ChatInvokeCompletion(
            completion=JudgeVerdict(verdict=passed, reasoning="ok" if passed else "", failureReason="add B"),
            usage=None,
        )


async def run_review(verdicts: list[bool], rounds: list[RoundResult], answers: list[str]) -> tuple[Any, ...]:
    judge = ScriptedJudge(verdicts)
    emitted: list[tuple[str, str, dict[str, Any]]] = []
    messages: list[str] = []
    answer = iter(answers)
    current = [next(answer)]

    async def emit(action: str, summary: str, data: dict[str, Any]) -> None:
        emitted.append((action, summary, data))

    async def resume(message: str) -> RoundResult:
        messages.append(message)
        current[0] = next(answer)
        return rounds.pop(0)

    context = ReviewContext(task="t", goal="g", done_text=lambda: "d", steps=list, answer=lambda: current[0])
    last = await Reviewer(judge, emit).review(context, resume)
    return last, judge.calls, [(d["verdict"], d["round"]) for _, _, d in emitted], messages


async def test_one_judge_call_per_round_and_a_pass_ends_the_review() -> None:
    last, calls, verdicts, messages = await run_review([False, True], [RoundResult(1, True)], ["a", "a+b"])
    assert last is True and calls == 2 and verdicts == [("changes", 0), ("pass", 1)]
    assert messages[0].endswith("(2 replies remaining)")


async def test_unchanged_answers_count_as_pushbacks_and_rounds_are_capped() -> None:
    rounds = [RoundResult(1, True) for _ in range(3)]
    last, calls, verdicts, messages = await run_review([False] * 5, rounds, ["a"] * 4)
    assert last is False and calls == 4  # three change rounds, one judge call each, plus the first verdict
    assert verdicts == [("changes", n) for n in range(4)]
    assert [m.endswith("(2 replies remaining)") for m in messages] == [True, False, False]
    assert messages[1].endswith("(1 replies remaining)") and "already replied twice" in messages[2]


async def test_a_round_without_agent_steps_stops_the_review() -> None:
    last, calls, verdicts, _ = await run_review([False, True], [RoundResult(0, False)], ["a", "a"])
    assert last is False and calls == 1 and verdicts == [("changes", 0), ("changes", 0)]
