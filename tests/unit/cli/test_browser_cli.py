"""``openbrowse browser <id> …`` against a stand-in server at the wire: what each command sends, what it prints.

The stand-in is a real HTTP server (Starlette on a thread) that records every request and answers with bodies
shaped as spec §20.2 says; ``b1`` is a raw browser, ``s1`` an agent session, anything else unknown.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from click.testing import CliRunner

from openbrowse.__main__ import cli
from tests.unit.cli.control_stand_in import ControlStandIn, Openbrowse


@pytest.mark.parametrize(
    ("args", "method", "route", "query", "body"),
    [
        (["status"], "GET", "", {}, None),
        (["tabs"], "GET", "/tabs", {}, None),
        (
            ["open", "https://example.org/", "--label", "docs"],
            "POST",
            "/tabs/open",
            {},
            {"url": "https://example.org/", "label": "docs"},
        ),
        (["focus", "t2"], "POST", "/tabs/focus", {}, {"targetId": "t2"}),
        (["close-tab", "my tab"], "DELETE", "/tabs/my tab", {}, None),
        (
            ["navigate", "https://example.com/a", "--target-id", "t2"],
            "POST",
            "/navigate",
            {},
            {"url": "https://example.com/a", "targetId": "t2"},
        ),
        (["snapshot"], "GET", "/snapshot", {}, None),
        (
            ["snapshot", "--format", "aria", "--limit", "200"],
            "GET",
            "/snapshot",
            {"format": "aria", "limit": "200"},
            None,
        ),
        (
            [
                "snapshot",
                "--interactive",
                "--compact",
                "--depth",
                "6",
                "--selector",
                "#main",
                "--frame",
                "iframe#f",
                "--max-chars",
                "5000",
                "--efficient",
            ],
            "GET",
            "/snapshot",
            {
                "interactive": "true",
                "compact": "true",
                "depth": "6",
                "selector": "#main",
                "frame": "iframe#f",
                "maxChars": "5000",
                "mode": "efficient",
            },
            None,
        ),
        (["click", "e12", "--double"], "POST", "/act", {}, {"kind": "click", "ref": "e12", "double": True}),
        (["click", "12"], "POST", "/act", {}, {"kind": "click", "ref": "12"}),
        (
            ["type", "e3", "hello world", "--submit"],
            "POST",
            "/act",
            {},
            {"kind": "type", "ref": "e3", "text": "hello world", "submit": True},
        ),
        (["press", "Enter"], "POST", "/act", {}, {"kind": "press", "key": "Enter"}),
        (["hover", "ax7"], "POST", "/act", {}, {"kind": "hover", "ref": "ax7"}),
        (["select", "e9", "A", "B"], "POST", "/act", {}, {"kind": "select", "ref": "e9", "values": ["A", "B"]}),
        (
            ["fill", "--fields", '[{"ref":"e1","type":"text","value":"Ada"}]'],
            "POST",
            "/act",
            {},
            {"kind": "fill", "fields": [{"ref": "e1", "type": "text", "value": "Ada"}]},
        ),
        (
            ["wait", "--text", "Done", "--url", "**/dash", "--load-state", "networkidle", "--time-ms", "500"],
            "POST",
            "/act",
            {},
            {"kind": "wait", "text": "Done", "url": "**/dash", "loadState": "networkidle", "timeMs": 500},
        ),
        (["wait", "--text-gone", "Loading"], "POST", "/act", {}, {"kind": "wait", "textGone": "Loading"}),
        (
            ["evaluate", "--fn", "(el) => el.textContent", "--ref", "e4"],
            "POST",
            "/act",
            {},
            {"kind": "evaluate", "fn": "(el) => el.textContent", "ref": "e4"},
        ),
        (
            ["batch", "--actions", '[{"kind":"click","ref":"e1"}]', "--continue"],
            "POST",
            "/act",
            {},
            {"kind": "batch", "actions": [{"kind": "click", "ref": "e1"}], "stopOnError": False},
        ),
        (
            ["screenshot", "--full-page", "--type", "jpeg"],
            "POST",
            "/screenshot",
            {},
            {"fullPage": True, "type": "jpeg"},
        ),
        (["screenshot", "--ref", "e2"], "POST", "/screenshot", {}, {"ref": "e2", "type": "png"}),
        (["pdf"], "POST", "/pdf", {}, {}),
        (
            [
                "extract",
                "--query",
                "Main point?",
                "--selector",
                "main",
                "--ignore-selector",
                "nav",
                "--ignore-selector",
                "footer",
                "--schema",
                '{"type":"object"}',
            ],
            "POST",
            "/extract",
            {},
            {
                "query": "Main point?",
                "selector": "main",
                "ignoreSelectors": ["nav", "footer"],
                "schema": {"type": "object"},
            },
        ),
        (["console", "--level", "error"], "GET", "/console", {"level": "error"}, None),
        (["errors", "--clear"], "GET", "/errors", {"clear": "true"}, None),
        (["requests", "--filter", "api"], "GET", "/requests", {"filter": "api"}, None),
        (
            ["dialog", "--accept", "--prompt-text", "yes"],
            "POST",
            "/hooks/dialog",
            {},
            {"accept": True, "promptText": "yes"},
        ),
        (["dialog", "--dismiss"], "POST", "/hooks/dialog", {}, {"accept": False}),
        (
            ["upload", "a.pdf", "b.png", "--ref", "e5"],
            "POST",
            "/hooks/file-chooser",
            {},
            {"paths": ["a.pdf", "b.png"], "ref": "e5"},
        ),
        (
            ["upload", "a.pdf", "--input-ref", "e6"],
            "POST",
            "/hooks/file-chooser",
            {},
            {"paths": ["a.pdf"], "inputRef": "e6"},
        ),
        (["download", "e8", "--path", "report.pdf"], "POST", "/download", {}, {"ref": "e8", "path": "report.pdf"}),
        (["wait-download"], "POST", "/wait/download", {}, {}),
        (["cookies"], "GET", "/cookies", {}, None),
        (
            ["cookies", "set", "sid", "abc", "--url", "https://example.com"],
            "POST",
            "/cookies/set",
            {},
            {"cookie": {"name": "sid", "value": "abc", "url": "https://example.com"}},
        ),
        (
            ["cookies", "set", "--cookie-json", '[{"name":"a","value":"1","url":"https://example.com"}]'],
            "POST",
            "/cookies/set-many",
            {},
            {"cookies": [{"name": "a", "value": "1", "url": "https://example.com"}]},
        ),
        (["cookies", "clear"], "POST", "/cookies/clear", {}, {}),
        (["storage", "local"], "GET", "/storage/local", {}, None),
        (["storage", "session", "get", "theme"], "GET", "/storage/session", {"key": "theme"}, None),
        (
            ["storage", "local", "set", "theme", "dark"],
            "POST",
            "/storage/local/set",
            {},
            {"key": "theme", "value": "dark"},
        ),
        (["storage", "session", "clear"], "POST", "/storage/session/clear", {}, {}),
        (["set", "offline", "on"], "POST", "/set/offline", {}, {"offline": True}),
        (["set", "headers", '{"X-Debug":"1"}'], "POST", "/set/headers", {}, {"headers": {"X-Debug": "1"}}),
        (
            ["set", "credentials", "user", "pass"],
            "POST",
            "/set/credentials",
            {},
            {"username": "user", "password": "pass"},
        ),
        (["set", "credentials", "--clear"], "POST", "/set/credentials", {}, {"clear": True}),
        (
            ["set", "geo", "37.7749", "-122.4194", "--origin", "https://example.com"],
            "POST",
            "/set/geolocation",
            {},
            {"latitude": 37.7749, "longitude": -122.4194, "origin": "https://example.com"},
        ),
        (["set", "media", "dark"], "POST", "/set/media", {}, {"colorScheme": "dark"}),
        (["set", "timezone", "America/New_York"], "POST", "/set/timezone", {}, {"timezoneId": "America/New_York"}),
        (["set", "locale", "en-US"], "POST", "/set/locale", {}, {"locale": "en-US"}),
        (["set", "device", "iPhone 14"], "POST", "/set/device", {}, {"name": "iPhone 14"}),
    ],
)
def test_each_command_sends_its_route_and_body(
    openbrowse: Openbrowse,
    stand_in: ControlStandIn,
    args: list[str],
    method: str,
    route: str,
    query: dict[str, str],
    body: Any,
) -> None:
    result = openbrowse("b1", *args)
    assert result.exit_code == 0, result.output
    [call] = stand_in.control_calls()
    assert (call.method, call.path) == (method, f"/v3/browsers/b1/browser{route}")
    assert (call.query, call.body) == (query, body)


# -- which browser the id names ------------------------------------------------------------------------------------
def test_an_id_is_looked_up_as_a_raw_browser_first(openbrowse: Openbrowse, stand_in: ControlStandIn) -> None:
    assert openbrowse("b1", "tabs").exit_code == 0
    assert [request.path for request in stand_in.requests] == ["/v3/browsers/b1", "/v3/browsers/b1/browser/tabs"]


def test_an_id_that_is_no_raw_browser_is_a_session(openbrowse: Openbrowse, stand_in: ControlStandIn) -> None:
    assert openbrowse("s1", "click", "e1").exit_code == 0
    paths = [request.path for request in stand_in.requests]
    assert paths == ["/v3/browsers/s1", "/v3/sessions/s1", "/v3/sessions/s1/browser/act"]


@pytest.mark.parametrize(("flag", "kind"), [("--session", "sessions"), ("--browser", "browsers")])
def test_session_or_browser_skips_the_lookup(
    openbrowse: Openbrowse, stand_in: ControlStandIn, flag: str, kind: str
) -> None:
    target = "s1" if kind == "sessions" else "b1"
    assert openbrowse(flag, target, "status").exit_code == 0
    assert [request.path for request in stand_in.requests] == [f"/v3/{kind}/{target}/browser"]


def test_an_unknown_id_is_a_usage_error(openbrowse: Openbrowse, stand_in: ControlStandIn) -> None:
    result = openbrowse("nope", "tabs")
    assert result.exit_code == 2
    assert "no raw browser or session has the id nope" in result.stderr
    assert stand_in.control_calls() == []


def test_the_api_key_is_sent_as_a_bearer_token(openbrowse: Openbrowse, stand_in: ControlStandIn) -> None:
    assert openbrowse("b1", "tabs", api_key="secret-key").exit_code == 0
    assert {request.authorization for request in stand_in.requests} == {"Bearer secret-key"}
    assert openbrowse("--api-key", "other", "b1", "tabs").exit_code == 0
    assert stand_in.requests[-1].authorization == "Bearer other"


# -- refusals ----------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("args", "route", "status", "body", "shown"),
    [
        (
            ["click", "e1"],
            "/act",
            409,
            {"error": "Agent is running; pause the session first", "code": "session_busy"},
            "409 session_busy: Agent is running; pause the session first",
        ),
        (
            ["evaluate", "--fn", "1+1"],
            "/act",
            403,
            {"error": "evaluate is disabled", "code": "ACT_EVALUATE_DISABLED", "detail": "evaluate is disabled"},
            "403 ACT_EVALUATE_DISABLED: evaluate is disabled",
        ),
        (
            ["click", "e99"],
            "/act",
            409,
            {"error": "Ref e99 is unknown or stale; take a new snapshot of this tab.", "code": "REF_STALE"},
            "409 REF_STALE: Ref e99 is unknown or stale",
        ),
        (
            ["screenshot", "--full-page", "--ref", "e1"],
            "/screenshot",
            400,
            {"error": "fullPage is not supported for element screenshots"},
            "400: fullPage is not supported for element screenshots",
        ),
        (["tabs"], "/tabs", 401, {"detail": "Invalid API key"}, "401: Invalid API key"),
        (["pdf"], "/pdf", 501, {"detail": "PDF needs a headless browser", "code": "X"}, "501 X: PDF needs"),
    ],
)
def test_a_refusal_prints_the_error_and_exits_2(
    openbrowse: Openbrowse,
    stand_in: ControlStandIn,
    args: list[str],
    route: str,
    status: int,
    body: dict[str, str],
    shown: str,
) -> None:
    stand_in.answer("POST" if route != "/tabs" else "GET", route, body, status)
    result = openbrowse("b1", *args)
    assert result.exit_code == 2
    assert shown in result.stderr and result.stdout == ""


def test_a_refusal_with_json_also_prints_the_body(openbrowse: Openbrowse, stand_in: ControlStandIn) -> None:
    refusal = {"error": "The browser is not live.", "code": "browser_not_live", "detail": "The browser is not live."}
    stand_in.answer("POST", "/navigate", refusal, 409)
    result = openbrowse("b1", "navigate", "https://example.com/", "--json")
    assert result.exit_code == 2
    assert json.loads(result.stdout) == refusal
    assert "409 browser_not_live: The browser is not live." in result.stderr


def test_page_text_in_an_error_is_made_safe(openbrowse: Openbrowse, stand_in: ControlStandIn) -> None:
    stand_in.answer("POST", "/act", {"error": "bad \x1b]0;pwned\x07ref", "code": "ACT_OPERATION_FAILED"}, 422)
    result = openbrowse("b1", "click", "e1")
    assert result.exit_code == 2 and "bad ref" in result.stderr and "\x1b" not in result.stderr


def test_an_unreachable_server_exits_2() -> None:
    env = {"OPENBROWSE_URL": "http://127.0.0.1:9", "OPENBROWSE_API_KEY": None}
    result = CliRunner().invoke(cli, ["browser", "b1", "tabs"], env=env)
    assert result.exit_code == 2 and "cannot reach the OpenBrowse server" in result.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["fill", "--fields", "{not json"], "not JSON"),
        (["fill", "--fields", '{"ref": "e1"}'], "must be a JSON array"),
        (["batch", "--actions", "[]", "--actions-file", "-"], "exactly one of --actions or --actions-file"),
        (["wait"], "say what to wait for"),
        (["upload", "a.pdf", "--ref", "e1", "--input-ref", "e2"], "--ref or --input-ref, not both"),
        (["storage", "local", "set", "only-key"], "set KEY VALUE"),
        (["set", "timezone"], "give the timezone value, or --clear"),
        (["cookies", "set", "sid"], "NAME VALUE"),
        (["extract", "--schema", "[1]"], "must be a JSON object"),
    ],
)
def test_usage_errors_send_nothing(
    openbrowse: Openbrowse, stand_in: ControlStandIn, args: list[str], message: str
) -> None:
    result = openbrowse("b1", *args)
    assert result.exit_code == 2 and message in result.stderr
    assert stand_in.control_calls() == []
