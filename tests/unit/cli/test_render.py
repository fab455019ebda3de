"""What the command line prints: feed lines, the progress line, the output."""

from __future__ import annotations

import json

from openbrowse.cli.render import ProgressLine, message_line, outcome_line, output_text


def test_output_is_json_with_a_schema_or_when_not_text() -> None:
    assert output_text("Plain answer.", as_json=False) == "Plain answer."
    assert json.loads(output_text({"jobs": []}, as_json=False) or "") == {"jobs": []}
    assert output_text("[1, 2]", as_json=True) == '"[1, 2]"'
    assert output_text(None, as_json=True) is None


def test_message_lines_show_step_and_summary_without_markup() -> None:
    step = {"type": "browser_action", "summary": "Click [bold]Buy[/bold]", "data": json.dumps({"step": 4})}
    assert message_line(step).plain == "→ [4] Click [bold]Buy[/bold]"
    event = {"type": "event", "summary": "Reviewer accepted", "data": json.dumps({"category": "judge"})}
    assert message_line(event).plain == "  ◦ judge: Reviewer accepted"
    user = {"type": "user_message", "summary": "Find jobs", "data": ""}
    assert message_line(user).plain == "› Find jobs"


def test_progress_line_names_the_phase_step_and_cost() -> None:
    line = ProgressLine()
    assert line.text().plain == "connecting"
    line.update_status({"status": "running", "stepCount": 2, "totalCostUsd": "0.0123", "activity": None})
    assert line.text().plain == "running · 2 steps · $0.0123"
    line.update_activity({"label": "Reasoning", "step": 3, "seconds": 4.0, "stream": None})
    assert line.text().plain.startswith("running · step 3 · Reasoning ")
    assert line.text().plain.endswith("s · $0.0123")


def test_outcome_line() -> None:
    ok = {"isTaskSuccessful": True, "status": "stopped", "stepCount": 1, "totalCostUsd": "0.01"}
    assert outcome_line(ok).plain == "Task succeeded · stopped · 1 step · $0.01"
    failed = {**ok, "isTaskSuccessful": False, "status": "error", "lastStepSummary": "Fatal error: 401"}
    assert outcome_line(failed).plain == "Task did not succeed · error · 1 step · $0.01\nFatal error: 401"
