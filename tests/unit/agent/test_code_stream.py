"""CodeStreamer without a browser: pacing of the pushes, the feed rows, and what the SSE code event carries."""

from __future__ import annotations

import json
from typing import Any

from openbrowse.agent.code.stream import PUSH_INTERVAL, CodeStreamer, runs_code, script_file
from openbrowse.domain.activity import ActivityKind, CodeStatus

CODE = "".join(f"print({n})\n" for n in range(40))


class Recorder:
    def __init__(self) -> None:
        self.codes: list[tuple[str, str, CodeStatus]] = []

    def begin(self, label: str, kind: ActivityKind, *, step: int | None = None) -> None:
        return None

    def stream(self, text: str) -> None:
        return None

    def finish(self) -> None:
        return None

    def code(self, name: str, code: str, status: CodeStatus) -> None:
        self.codes.append((name, code, status))


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def streamer() -> tuple[CodeStreamer, Recorder, list[tuple[str, str]], Clock]:
    activity = Recorder()
    rows: list[tuple[str, str]] = []
    clock = Clock()

    async def write(summary: str, file: str) -> None:
        rows.append((summary, file))

    return CodeStreamer(None, None, activity, write, clock=clock), activity, rows, clock  # type: ignore[arg-type]


async def test_pushes_are_paced_and_one_feed_row_is_written() -> None:
    code, activity, rows, clock = streamer()
    code.begin_reply()
    text = json.dumps({"memory": "m", "action": [{"run_code_file": {"name": "scrape.py", "code": CODE}}]})
    await code.reply_started()
    for start in range(0, len(text), 5):
        await code.reply_text(text[start : start + 5])
        clock.now += 0.05
    elapsed = 0.05 * len(range(0, len(text), 5))
    assert 2 <= len(activity.codes) <= elapsed / PUSH_INTERVAL + 1
    assert all(status is CodeStatus.WRITING and CODE.startswith(c) for _, c, status in activity.codes)
    assert rows == [("Writing scrape.py", "scripts/scrape.py")]


async def test_running_and_done_reach_the_event_stream() -> None:
    code, activity, _, _ = streamer()
    await code.running("job", CODE)
    await code.finished("job", CODE, failed=True)
    assert [status for *_, status in activity.codes] == [CodeStatus.RUNNING, CodeStatus.DONE]


async def test_a_rerun_without_code_writes_no_row() -> None:
    code, _, rows, _ = streamer()
    code.begin_reply()
    await code.reply_text(json.dumps({"action": [{"run_code_file": {"name": "again"}}]}))
    assert rows == []


def test_helpers() -> None:
    class Action:
        def __init__(self, dump: dict[str, Any]) -> None:
            self._dump = dump

        def model_dump(self, exclude_unset: bool = False) -> dict[str, Any]:
            return self._dump

    class Reply:
        def __init__(self, *actions: dict[str, Any]) -> None:
            self.action = [Action(a) for a in actions]

    assert runs_code(Reply({"navigate": {"url": "u"}}, {"run_code_file": {"name": "x"}}))
    assert not runs_code(Reply({"click": {"index": 1}}))
    assert script_file("../etc/passwd.py") == "scripts/etc_passwd.py"
    assert script_file(None) == "scripts/script.py"
