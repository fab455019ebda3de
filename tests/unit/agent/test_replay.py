"""Replaying a keep-alive conversation into a fresh browser (spec §8.3)."""

from __future__ import annotations

import json
from datetime import UTC, datetime

from openbrowse.agent.turns.replay import PREAMBLE, replay_preamble
from openbrowse.domain.feed import Message
from openbrowse.domain.ids import MessageId, SessionId

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def message(seq: int, kind: str, summary: str, output: str | None = None) -> Message:
    data = json.dumps({"output": output}) if kind == "completion" else ""
    return Message(MessageId(str(seq)), SessionId("s"), seq, "ai", kind, summary, data, False, NOW)


def test_pairs_requests_with_their_answers_and_excludes_the_current_request() -> None:
    feed = [
        message(1, "user_message", "What does the blue one cost?"),
        message(2, "browser_action", "click"),
        message(3, "completion", "Task completed successfully", "42 EUR"),
        message(4, "user_message", "And the red one?"),
    ]
    preamble = replay_preamble(feed, "And the red one?")
    assert preamble is not None and preamble.startswith(PREAMBLE)
    assert "They asked: What does the blue one cost?\n  Answer: 42 EUR" in preamble
    assert preamble.endswith("FOLLOW-UP REQUEST: And the red one?")
    assert preamble.count("They asked") == 1


def test_nothing_to_replay() -> None:
    assert replay_preamble([message(1, "user_message", "first")], "first") is None


def test_newest_exchanges_are_kept_within_the_budget() -> None:
    feed = []
    for n in range(10):
        feed += [
            message(2 * n, "user_message", f"q{n} " + "x" * 590),
            message(2 * n + 1, "completion", "d", "a" * 1300),
        ]
    preamble = replay_preamble(feed, "now")
    assert preamble is not None
    assert "q9" in preamble and "q0" not in preamble
    assert len(preamble) < 4000 + len(PREAMBLE) + 100
    assert preamble.index("q8") < preamble.index("q9")
