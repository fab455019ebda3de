"""The guard layer and the delivery envelope: back-references, caps with the full text in a file, repeats."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from browser_use.agent.views import ActionResult

from openbrowse.agent.files.delivery import INLINE_LIMIT, envelope, safe_name
from openbrowse.agent.guard import CAP_CHARS, Guard, preview


def test_small_data_is_inline_and_large_data_is_a_sample() -> None:
    small = json.loads(envelope("ok", "fetch_a.json", {"a": 1}))
    assert small == {"note": "ok", "file": "fetch_a.json", "data": {"a": 1}}
    big = json.loads(envelope("ok", "fetch_b.html", "x" * (INLINE_LIMIT + 1)))
    assert big["truncated"] is True and big["totalChars"] == INLINE_LIMIT + 1
    assert big["sample"] == "x" * 300 and "read_file('fetch_b.html')" in big["readWith"]
    assert "data" not in big


def test_safe_names() -> None:
    assert safe_name("example.com/a b/c?d") == "example.com_a_b_c_d"
    assert safe_name("///") == "file"
    assert len(safe_name("a" * 500)) == 80


def test_a_long_output_is_capped_into_a_readout_file_then_back_referenced(tmp_path: Path) -> None:
    guard = Guard(tmp_path)
    text = json.dumps({"rows": [{"name": f"row {i}", "blob": "b" * 300} for i in range(40)]})
    assert len(text) > CAP_CHARS
    first = guard.filter_output("evaluate", text, None)
    assert (tmp_path / "readout_evaluate_1.txt").read_text() == text
    assert '"blob": "<300 chars>"' in first and "readout_evaluate_1.txt" in first
    second = guard.filter_output("find_links", " ".join(text.split("\n")), None)
    assert second.startswith("[identical to earlier output #1 — not repeated") and "readout_evaluate_1.txt" in second
    assert "stop repeating" not in second


def test_dedupe_only_actions_are_never_capped_and_short_outputs_never_deduplicated(tmp_path: Path) -> None:
    guard = Guard(tmp_path)
    long = "z" * (CAP_CHARS * 2)
    assert guard.filter_output("recall", long, None) == long
    assert not list(tmp_path.iterdir())
    assert guard.filter_output("evaluate", "short", None) == "short"
    assert guard.filter_output("search_page", "short", None) == "short"


def test_plain_text_preview_is_the_first_8000_chars() -> None:
    assert preview("q" * 20000) == "q" * CAP_CHARS


def test_consecutive_identical_outputs_and_errors_get_a_repeat_note(tmp_path: Path) -> None:
    guard = Guard(tmp_path)
    assert guard.filter_output("evaluate", "same", None) == "same"
    assert "stop repeating" in guard.filter_output("evaluate", "same", None)
    assert guard.filter_output("evaluate", "other", None) == "other"
    assert guard.filter_error("http_fetch", "refused") is None
    assert guard.filter_error("http_fetch", "refused") is not None


async def test_the_wrapper_rewrites_results_and_repeated_errors(tmp_path: Path) -> None:
    guard = Guard(tmp_path)
    calls: list[int] = []

    async def action(**kwargs: object) -> ActionResult:
        calls.append(1)
        if kwargs.get("fail"):
            raise RuntimeError("boom")
        return ActionResult(extracted_content="same")

    wrapped = guard.wrap("evaluate", action)
    await wrapped(params=None)
    result = await wrapped(params=None)
    assert result.extracted_content is not None and "stop repeating" in result.extracted_content
    with pytest.raises(RuntimeError, match=r"^boom$"):
        await wrapped(fail=True)
    with pytest.raises(RuntimeError, match=r"boom .*stop repeating"):
        await wrapped(fail=True)


def test_pacing_only_under_real_contention(tmp_path: Path) -> None:
    from openbrowse.agent.tools.pacing import cpu_stall, spacing_for

    assert spacing_for(6, 1, 0.9) == 0.0
    assert spacing_for(6, 3, 0.04) == 0.0
    assert spacing_for(6, 2, 0.5) == pytest.approx(0.4)
    assert spacing_for(6, 2, 1.0) == pytest.approx(0.8)
    assert spacing_for(2, 2, 20.0) == pytest.approx(8.0)
    psi = tmp_path / "cpu"
    psi.write_text("some avg10=12.50 avg60=3.00 avg300=1.00 total=1\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n")
    assert cpu_stall(psi) == pytest.approx(0.125)
    assert cpu_stall(tmp_path / "missing") == 0.0
