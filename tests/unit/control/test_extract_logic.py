"""Pure parts of ``/extract``: HTML to readable text, the prompt, and reading a JSON answer."""

from __future__ import annotations

import json

import pytest

from openbrowse.control.extract import NOT_FOUND, build_prompt, html_to_text, parse_json_answer


def test_html_to_text_keeps_structure() -> None:
    text = html_to_text("<main><h1>Releases</h1><ul><li>v1</li><li>v2</li></ul><p>A <a href='/x'>link</a></p></main>")
    assert text.splitlines()[0] == "# Releases"
    assert "- v1" in text and "- v2" in text
    assert "[link](/x)" in text


def test_html_to_text_collapses_blank_runs() -> None:
    assert "\n\n\n" not in html_to_text("<p>a</p><div></div><div></div><p>b</p>")


def test_prompt_fences_the_page_and_asks_for_not_found() -> None:
    prompt = build_prompt("What is the price?", "Price: 3 EUR", "https://shop.test/", None)
    assert "What is the price?" in prompt
    assert NOT_FOUND in prompt
    assert '<page url="https://shop.test/">\nPrice: 3 EUR\n</page>' in prompt


def test_prompt_with_schema_asks_for_json() -> None:
    prompt = build_prompt("List", "x", "https://a.test/", {"type": "array"})
    assert '{"type":"array"}' in prompt


@pytest.mark.parametrize(
    ("answer", "value"),
    [('{"a": 1}', {"a": 1}), ("```json\n[1, 2]\n```", [1, 2]), ('```\n"x"\n```', "x"), (" 3 ", 3)],
)
def test_parse_json_answer(answer: str, value: object) -> None:
    assert parse_json_answer(answer) == value


def test_parse_json_answer_rejects_prose() -> None:
    with pytest.raises(json.JSONDecodeError):
        parse_json_answer("The answer is 3")
