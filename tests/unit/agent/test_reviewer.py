"""The reviewer's pure parts (spec §14): the continuation wording, pushback escalation, the dissent note."""

from __future__ import annotations

from openbrowse.agent.reviewer import JudgeVerdict, changes_message, dissent, judge_messages


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
