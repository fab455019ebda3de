"""What ``openbrowse browser <id> …`` prints: readable output by default, the API's JSON with ``--json``, and exit
code 1 when the server answered but the action did not happen (a dialog blocked it, a batch entry failed)."""

from __future__ import annotations

import json

import pytest

from tests.unit.cli.control_stand_in import DEFAULT_ANSWERS, SNAPSHOT_TEXT, ControlStandIn, Openbrowse

BLOCKED = {
    "blockedByDialog": True,
    "browserState": {"dialogs": {"pending": [{"id": "d1", "type": "confirm", "message": "Delete it?"}], "recent": []}},
}


def test_snapshot_prints_the_text_as_it_is(openbrowse: Openbrowse, stand_in: ControlStandIn) -> None:
    result = openbrowse("b1", "snapshot")
    assert result.exit_code == 0
    assert result.stdout == SNAPSHOT_TEXT + "\n" and result.stderr == ""


def test_snapshot_text_loses_terminal_controls(openbrowse: Openbrowse, stand_in: ControlStandIn) -> None:
    hostile = {**DEFAULT_ANSWERS[("GET", "/snapshot")], "snapshot": '- heading "\x1b]0;pwned\x07Hi\x1b[2J" [ref=e1]'}
    stand_in.answer("GET", "/snapshot", {**hostile, "truncated": True})
    result = openbrowse("b1", "snapshot")
    assert result.stdout == '- heading "Hi" [ref=e1]\n'
    assert "truncated" in result.stderr


def test_json_prints_the_body(openbrowse: Openbrowse, stand_in: ControlStandIn) -> None:
    for args in (("b1", "snapshot", "--json"), ("--json", "b1", "snapshot")):
        result = openbrowse(*args)
        assert result.exit_code == 0
        assert json.loads(result.stdout) == DEFAULT_ANSWERS[("GET", "/snapshot")]


def test_tabs_are_a_table(openbrowse: Openbrowse, stand_in: ControlStandIn) -> None:
    result = openbrowse("b1", "tabs")
    assert result.exit_code == 0
    lines = [line.rstrip() for line in result.stdout.splitlines()]
    assert lines[0] == "Tabs (2)"
    assert any("t1" in line and "Example Domain" in line and "https://example.com/" in line for line in lines)
    assert any("t2" in line and "research" in line for line in lines)


def test_tabs_of_a_browser_that_is_not_running(openbrowse: Openbrowse, stand_in: ControlStandIn) -> None:
    stand_in.answer("GET", "/tabs", {"running": False, "tabs": []})
    result = openbrowse("b1", "tabs")
    assert result.exit_code == 0 and result.stdout == "The browser is not running.\n"


def test_status_lists_engine_and_active_tab(openbrowse: Openbrowse, stand_in: ControlStandIn) -> None:
    result = openbrowse("b1", "status")
    rows = dict(line.split() for line in result.stdout.splitlines() if len(line.split()) == 2)
    assert rows["engine"] == "playwright" and rows["activeTargetId"] == "9F2C" and rows["tabs"] == "1"


def test_screenshot_prints_its_path_and_url(
    openbrowse: Openbrowse, stand_in: ControlStandIn, server: tuple[ControlStandIn, str]
) -> None:
    result = openbrowse("b1", "screenshot")
    assert result.stdout.splitlines() == [
        "path: /data/browsers/b1/screenshots/shot-1.png",
        f"url: {server[1]}/v3/browsers/b1/files/screenshots/shot-1.png",
    ]


def test_open_and_navigate_say_where_they_are(openbrowse: Openbrowse, stand_in: ControlStandIn) -> None:
    assert openbrowse("b1", "open", "https://example.org/").stdout == "opened t3 · https://example.org/\n"
    stand_in.answer("POST", "/navigate", {"ok": True, "targetId": "9F2C", "url": "https://example.com/next"})
    assert openbrowse("b1", "navigate", "https://example.com/next").stdout == "navigated · https://example.com/next\n"


def test_an_action_says_what_it_did(openbrowse: Openbrowse, stand_in: ControlStandIn) -> None:
    stand_in.answer("POST", "/act", {"ok": True, "targetId": "9F2C", "url": "https://example.com/done"})
    result = openbrowse("b1", "click", "e2")
    assert result.exit_code == 0 and result.stdout == "clicked e2 · https://example.com/done\n"


def test_an_action_blocked_by_a_dialog_exits_1(openbrowse: Openbrowse, stand_in: ControlStandIn) -> None:
    stand_in.answer("POST", "/act", BLOCKED)
    result = openbrowse("b1", "click", "e2")
    assert result.exit_code == 1 and result.stdout == ""
    assert "blocked by confirm 'Delete it?'" in result.stderr and "dialog --accept" in result.stderr


def test_evaluate_prints_its_result(openbrowse: Openbrowse, stand_in: ControlStandIn) -> None:
    stand_in.answer("POST", "/act", {"ok": True, "targetId": "9F2C", "result": "Example Domain"})
    assert openbrowse("b1", "evaluate", "--fn", "document.title").stdout == "Example Domain\n"
    stand_in.answer("POST", "/act", {"ok": True, "targetId": "9F2C", "result": {"links": 2}})
    assert json.loads(openbrowse("b1", "evaluate", "--fn", "({links: 2})").stdout) == {"links": 2}


@pytest.mark.parametrize(
    ("results", "aborted", "exit_code", "lines"),
    [
        ([{"ok": True}, {"ok": True, "navigated": True, "url": "https://example.com/b"}], None, 0,
         ["1. ok", "2. ok · navigated to https://example.com/b"]),
        ([{"ok": True}, {"ok": False, "error": "Element not visible"}], None, 1,
         ["1. ok", "2. failed: Element not visible"]),
    ],
)  # fmt: skip
def test_batch_lists_each_result_and_fails_on_a_failed_entry(
    openbrowse: Openbrowse,
    stand_in: ControlStandIn,
    results: list[dict[str, object]],
    aborted: object,
    exit_code: int,
    lines: list[str],
) -> None:
    stand_in.answer(
        "POST", "/act", {"ok": exit_code == 0, "targetId": "9F2C", "url": "https://example.com/", "results": results}
    )
    result = openbrowse("b1", "batch", "--actions", "[]")
    assert result.exit_code == exit_code and result.stdout.splitlines() == lines
    assert ("1 of 2 actions failed" in result.stderr) == (exit_code == 1)


def test_batch_reads_actions_from_stdin_and_reports_an_abort(openbrowse: Openbrowse, stand_in: ControlStandIn) -> None:
    aborted = {"reason": "navigation", "afterAction": 1, "url": "https://example.com/b", "skipped": 2}
    stand_in.answer(
        "POST",
        "/act",
        {
            "ok": True,
            "targetId": "9F2C",
            "results": [{"ok": True, "navigated": True, "url": "https://example.com/b"}],
            "aborted": aborted,
        },
    )
    result = openbrowse("b1", "batch", "--actions-file", "-", input='[{"kind": "click", "ref": "e1"}]')
    assert result.exit_code == 0
    assert stand_in.control_calls()[-1].body["actions"] == [{"kind": "click", "ref": "e1"}]
    assert "stopped after action 1 (navigation), 2 skipped" in result.stdout


def test_logs_are_one_entry_a_line(openbrowse: Openbrowse, stand_in: ControlStandIn) -> None:
    assert openbrowse("b1", "console").stdout == "[error] boom (https://example.com/app.js:3)\n"
    request = {"method": "POST", "url": "https://example.com/api", "status": 500, "resourceType": "fetch"}
    stand_in.answer("GET", "/requests", {"ok": True, "entries": [request]})
    assert openbrowse("b1", "requests").stdout == "POST 500 https://example.com/api\n"
    stand_in.answer("GET", "/errors", {"ok": True, "entries": []})
    assert openbrowse("b1", "errors").stdout == "(none)\n"


def test_cookies_and_storage_are_tables(openbrowse: Openbrowse, stand_in: ControlStandIn) -> None:
    cookies = openbrowse("b1", "cookies").stdout
    assert "Cookies (1)" in cookies and "sid" in cookies and "abc123" in cookies and "example.com" in cookies
    storage = openbrowse("b1", "storage", "local").stdout
    assert "https://example.com (1 items)" in storage and "theme" in storage and "dark" in storage


def test_settings_print_the_overrides_in_force(openbrowse: Openbrowse, stand_in: ControlStandIn) -> None:
    stand_in.answer("POST", "/set/offline", {"ok": True, "overrides": {"offline": True, "locale": "en-US"}})
    result = openbrowse("b1", "set", "offline", "on")
    assert result.exit_code == 0 and json.loads(result.stdout) == {"offline": True, "locale": "en-US"}


def test_dialog_says_what_it_armed(openbrowse: Openbrowse, stand_in: ControlStandIn) -> None:
    assert openbrowse("b1", "dialog", "--dismiss").stdout == "the next dialog will be dismissed\n"
    assert openbrowse("b1", "dialog", "--accept", "--dialog-id", "d1").stdout == "dialog d1 accepted\n"
