"""The incremental decoder of a streaming run_code_file action (spec §11.3)."""

from __future__ import annotations

import json
from collections.abc import Iterable

import pytest

from openbrowse.agent.code.decoder import CodeDecoder

CODE = (
    "import json\n"
    "rows = await browser.evaluate(\"[...document.querySelectorAll('li')].length\")\n"
    'print(f"{rows} \\u2713 caf\u00e9 \U0001f600")\n'
)


def reply(action: object, **extra: object) -> str:
    return json.dumps({"thinking": "let me { script } it", **extra, "action": action})


def chunks(text: str, size: int) -> Iterable[str]:
    return (text[i : i + size] for i in range(0, len(text), size))


def decode(fragments: Iterable[str]) -> CodeDecoder:
    decoder = CodeDecoder()
    for fragment in fragments:
        decoder.feed(fragment)
    return decoder


@pytest.mark.parametrize("size", [1, 2, 3, 5, 7, 64, 10_000])
def test_code_is_decoded_whatever_the_chunk_boundaries(size: int) -> None:
    text = reply([{"run_code_file": {"name": "count", "code": CODE}}])
    decoder = decode(chunks(text, size))
    assert decoder.found and decoder.code_complete
    assert decoder.name == "count"
    assert decoder.code == CODE


def test_every_prefix_is_a_prefix_of_the_code() -> None:
    text = reply([{"run_code_file": {"name": "count", "code": CODE}}], memory="x")
    decoder = CodeDecoder()
    seen = []
    for char in text:
        decoder.feed(char)
        assert CODE.startswith(decoder.code)
        seen.append(len(decoder.code))
    assert seen == sorted(seen) and decoder.code == CODE


def test_unicode_escapes_split_across_chunks_and_surrogate_pairs() -> None:
    raw = '{"action":[{"run_code_file":{"name":"u","code":"a\\u00e9b\\ud83d\\ude00c\\n\\"q\\"\\\\"}}]}'
    for split in range(1, len(raw)):
        decoder = decode([raw[:split], raw[split:]])
        assert decoder.code == 'a\u00e9b\U0001f600c\n"q"\\', split


def test_the_action_is_found_nested_in_the_list_after_other_actions() -> None:
    action = [{"navigate": {"url": "https://example.com/?q={x}"}}, {"run_code_file": {"code": CODE, "name": "late"}}]
    decoder = decode(chunks(reply(action), 11))
    assert decoder.found and decoder.code == CODE and decoder.name == "late"


def test_the_action_list_sent_as_a_json_string() -> None:
    action = json.dumps([{"run_code_file": {"name": "stringly", "code": CODE}}])
    text = reply(action)
    decoder = CodeDecoder()
    for fragment in chunks(text, 4):
        decoder.feed(fragment)
        assert CODE.startswith(decoder.code)
    assert decoder.found and decoder.name == "stringly" and decoder.code == CODE


def test_detected_as_soon_as_the_key_is_complete_before_any_code() -> None:
    decoder = decode(['{"thinking": "t", "action": [{"run_code_file": {"na'])
    assert decoder.found and decoder.name is None and decoder.code == ""


def test_code_fences_and_prose_around_the_json_are_skipped() -> None:
    text = "Sure, here it is:\n```json\n" + reply([{"run_code_file": {"name": "f", "code": "print(1)"}}]) + "\n```"
    decoder = decode(chunks(text, 3))
    assert decoder.code == "print(1)" and decoder.name == "f"


def test_no_run_code_file_and_lookalike_strings() -> None:
    text = reply([{"click": {"index": 3}}], memory='run_code_file {"code": "nope"}', next_goal="run_code_file")
    decoder = decode(chunks(text, 5))
    assert not decoder.found and decoder.code == ""


def test_a_second_run_code_file_does_not_replace_the_first() -> None:
    action = [{"run_code_file": {"name": "one", "code": "1"}}, {"run_code_file": {"name": "two", "code": "2"}}]
    decoder = decode([reply(action)])
    assert (decoder.name, decoder.code) == ("one", "1")


def test_concatenated_objects_are_scanned_one_after_the_other() -> None:
    """Split tool calls: one JSON object per block, the script in the second."""
    decoder = decode(['{"thinking": "plan", "action": [{"navigate": {"url": "u"}}]}', '{"action": [{"run_code_file"'])
    assert decoder.found
    decoder.feed(': {"name": "b", "code": "x = 1"}}]}')
    assert decoder.code == "x = 1"


def test_literals_numbers_and_nested_objects_do_not_confuse_the_paths() -> None:
    text = json.dumps(
        {
            "a": [1, 2.5e3, True, None, {"code": "not this"}],
            "action": [{"run_code_file": {"url": None, "extra": {"code": "nor this"}, "code": "yes", "name": "n"}}],
        }
    )
    decoder = decode(chunks(text, 2))
    assert decoder.code == "yes" and decoder.name == "n"


def test_a_rerun_without_code_is_found_but_has_no_code() -> None:
    decoder = decode([reply([{"run_code_file": {"name": "again"}}])])
    assert decoder.found and decoder.name == "again" and not decoder.code_started


def test_an_empty_code_string_counts_as_started_and_complete() -> None:
    decoder = decode([reply([{"run_code_file": {"name": "e", "code": ""}}])])
    assert decoder.code_started and decoder.code_complete and decoder.code == ""


def test_raw_control_characters_inside_the_code_string_are_kept() -> None:
    """Some models write literal newlines and tabs inside JSON strings."""
    decoder = decode(['{"action": [{"run_code_file": {"name": "r", "code": "a\n\tb', 'c"}}]}'])
    assert decoder.code == "a\n\tbc" and decoder.code_complete


def test_prose_that_looks_like_json_before_the_reply_is_stepped_over() -> None:
    text = "Plan [step one] {not json} then:\n" + reply([{"run_code_file": {"name": "p", "code": "ok"}}])
    decoder = decode(chunks(text, 6))
    assert decoder.found and (decoder.name, decoder.code) == ("p", "ok")
