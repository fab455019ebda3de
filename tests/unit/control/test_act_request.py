"""``/act`` bodies checked without a browser: kinds, fields, batches, refs, evaluate sources."""

from __future__ import annotations

from typing import Any

import pytest

from openbrowse.control.act_request import evaluate_source, refs_of, validate_action
from openbrowse.control.errors import ControlError


def refused(action: Any, **options: Any) -> ControlError:
    with pytest.raises(ControlError) as caught:
        validate_action(action, **options)
    return caught.value


@pytest.mark.parametrize(
    ("action", "status", "code"),
    [
        ({}, 400, "ACT_KIND_REQUIRED"),
        ({"kind": "fly"}, 400, "ACT_KIND_REQUIRED"),
        ({"kind": "click", "ref": "e1", "selector": "#x"}, 400, "ACT_SELECTOR_UNSUPPORTED"),
        ({"kind": "click"}, 400, "ACT_INVALID_REQUEST"),
        ({"kind": "click", "ref": "e1", "button": "thumb"}, 400, "ACT_INVALID_REQUEST"),
        ({"kind": "clickCoords", "x": 1}, 400, "ACT_INVALID_REQUEST"),
        ({"kind": "type", "ref": "e1"}, 400, "ACT_INVALID_REQUEST"),
        ({"kind": "drag", "startRef": "e1"}, 400, "ACT_INVALID_REQUEST"),
        ({"kind": "select", "ref": "e1", "values": []}, 400, "ACT_INVALID_REQUEST"),
        ({"kind": "fill", "fields": [{"ref": "e1"}]}, 400, "ACT_INVALID_REQUEST"),
        ({"kind": "resize", "width": 0, "height": 10}, 400, "ACT_INVALID_REQUEST"),
        ({"kind": "wait"}, 400, "ACT_INVALID_REQUEST"),
        ({"kind": "wait", "loadState": "done"}, 400, "ACT_INVALID_REQUEST"),
        ({"kind": "evaluate"}, 400, "ACT_INVALID_REQUEST"),
        ({"kind": "batch", "actions": []}, 400, "ACT_INVALID_REQUEST"),
        ("click", 400, "ACT_INVALID_REQUEST"),
    ],
)
def test_refusals(action: Any, status: int, code: str) -> None:
    error = refused(action)
    assert (error.status, error.code) == (status, code)


def test_valid_actions_pass() -> None:
    for action in (
        {"kind": "click", "ref": "12", "double": True, "modifiers": ["Shift"]},
        {"kind": "type", "ref": "e1", "text": "", "submit": True},
        {"kind": "wait", "selector": "#main", "url": "**/dash", "timeMs": 10},
        {"kind": "fill", "fields": [{"ref": "e1", "type": "checkbox", "value": True}]},
        {"kind": "close"},
    ):
        assert validate_action(action) is action


def test_evaluate_switch_covers_wait_fn_and_nested_actions() -> None:
    for action in (
        {"kind": "evaluate", "fn": "1"},
        {"kind": "wait", "fn": "true"},
        {"kind": "batch", "actions": [{"kind": "batch", "actions": [{"kind": "evaluate", "fn": "1"}]}]},
    ):
        error = refused(action, evaluate_enabled=False)
        assert (error.status, error.code) == (403, "ACT_EVALUATE_DISABLED")


def test_batch_limits() -> None:
    assert "maximum of 100" in refused({"kind": "batch", "actions": [{"kind": "close"}] * 101}).message
    nested: dict[str, Any] = {"kind": "close"}
    for _ in range(5):
        nested = {"kind": "batch", "actions": [nested]}
    assert validate_action(nested) is nested
    assert "depth" in refused({"kind": "batch", "actions": [nested]}).message
    inner_error = refused({"kind": "batch", "actions": [{"kind": "close"}, {"kind": "hover"}]})
    assert inner_error.message == "ref is required"


def test_refs_of_walks_nested_actions_and_fields() -> None:
    action = {
        "kind": "batch",
        "actions": [
            {"kind": "click", "ref": "@e1"},
            {"kind": "drag", "startRef": "e2", "endRef": "e3"},
            {"kind": "batch", "actions": [{"kind": "fill", "fields": [{"ref": "ax4", "value": "v"}]}]},
        ],
    }
    assert refs_of(action) == ["e1", "e2", "e3", "ax4"]


@pytest.mark.parametrize(
    ("source", "with_element", "expected"),
    [
        ("() => 1", False, "() => 1"),
        ("async (el) => el.id", True, "async (el) => el.id"),
        ("el => el.id", True, "el => el.id"),
        ("function f() { return 1 }", False, "function f() { return 1 }"),
        ("document.title", False, "() => (\ndocument.title\n)"),
        ("el.textContent", True, "(el) => (\nel.textContent\n)"),
        ("const t = 1; return t;", False, "async () => {\nconst t = 1; return t;\n}"),
        ("return el.id", True, "async (el) => {\nreturn el.id\n}"),
    ],
)
def test_evaluate_source(source: str, with_element: bool, expected: str) -> None:
    assert evaluate_source(source, with_element=with_element) == expected
