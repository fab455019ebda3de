"""Snapshot text without a browser: parsing lines, role refs and nth, options, [new] deltas, budgets."""

from __future__ import annotations

from typing import Any

from openbrowse.control.refs import normalize_ref
from openbrowse.control.snapshot import flatten_ax_tree
from openbrowse.control.snapshot_text import TRUNCATION_MARKER, Built, build_ai, build_role, finalize, parse_line

ARIA = """- document:
  - heading "Title" [level=1]
  - text: Name
  - textbox "Name"
  - button "Go"
  - button "Go"
  - button
  - list:
    - listitem: one
  - link "Say \\"hi\\"":
    - /url: /hi
  - paragraph: "[ref=e9] is page text"
"""

AI = """- generic [active] [ref=e1]:
  - heading "Title" [level=1] [ref=e2]
  - textbox "Name" [ref=e3]
  - button "Go" [ref=e4]
  - paragraph [ref=e5]: "[ref=e77] text"
  - iframe [ref=e6]:
    - button "Inner" [ref=f1e2]
"""


def test_parse_line_reads_role_name_and_ref() -> None:
    line = parse_line('  - button "Save \\"all\\"" [disabled] [ref=e12]: label')
    assert line is not None
    assert (line.indent, line.role, line.name, line.ref) == (1, "button", 'Save "all"', "e12")
    assert parse_line("  - /url: /x") is None
    assert parse_line("plain text") is None
    page_text = parse_line('- paragraph: "[ref=e9] is page text"')
    assert page_text is not None and page_text.ref is None  # refs only come from the attribute groups


def test_build_role_gives_refs_and_nth_for_duplicates() -> None:
    built = build_role(ARIA)
    assert built.refs == {
        "e1": {"role": "heading", "name": "Title"},
        "e2": {"role": "textbox", "name": "Name"},
        "e3": {"role": "button", "name": "Go", "nth": 0},
        "e4": {"role": "button", "name": "Go", "nth": 1},
        "e5": {"role": "button"},
        "e6": {"role": "link", "name": 'Say "hi"'},
    }
    lines = built.snapshot.splitlines()
    assert '  - button "Go" [ref=e4] [nth=1]' in lines
    assert '  - link "Say \\"hi\\"" [ref=e6]:' in lines
    assert "    - listitem: one" in lines  # unnamed content gets no ref


def test_interactive_is_flat_and_keeps_nth_of_the_whole_page() -> None:
    built = build_role(ARIA, interactive=True)
    assert built.snapshot.splitlines() == [
        '- textbox "Name" [ref=e2]',
        '- button "Go" [ref=e3]',
        '- button "Go" [ref=e4] [nth=1]',
        "- button [ref=e5]",
        '- link "Say \\"hi\\"" [ref=e6]',
    ]
    assert "e1" not in built.refs


def test_depth_and_compact() -> None:
    assert build_role(ARIA, max_depth=0).snapshot == "- document:"
    compact = build_role(ARIA, compact=True).snapshot.splitlines()
    assert "    - listitem: one" in compact and "- document:" not in compact  # unnamed containers go
    assert build_role("- generic:\n  - generic:", compact=True).snapshot == "(empty)"


def test_build_ai_keeps_playwright_refs() -> None:
    built = build_ai(AI)
    assert built.snapshot == AI.rstrip("\n")
    assert built.refs["f1e2"] == {"role": "button", "name": "Inner"}
    assert "e77" not in built.refs
    interactive = build_ai(AI, interactive=True)
    assert interactive.snapshot.splitlines() == [
        '- textbox "Name" [ref=e3]',
        '- button "Go" [ref=e4]',
        '- button "Inner" [ref=f1e2]',
    ]


def test_finalize_marks_new_lines_against_the_previous_keys() -> None:
    first = finalize(build_role(ARIA), mode="role", max_chars=None, previous=None)
    assert first.new_elements is None and "[new]" not in first.snapshot
    grown = ARIA + '  - button "Fresh"\n'
    second = finalize(build_role(grown), mode="role", max_chars=None, previous=first.keys)
    assert second.new_elements == 1
    marked = [line for line in second.snapshot.splitlines() if line.endswith("[new]")]
    assert marked == ['  - button "Fresh" [ref=e7] [new]']
    assert second.snapshot.endswith("1 new element(s) since last snapshot")
    same = finalize(build_role(grown), mode="role", max_chars=None, previous=second.keys)
    assert same.new_elements == 0 and "[new]" not in same.snapshot


def test_finalize_truncates_on_line_boundaries_and_drops_hidden_refs() -> None:
    built = Built("\n".join(f'- button "B{index}" [ref=e{index}]' for index in range(1, 40)))
    built.refs = {f"e{index}": {"role": "button", "name": f"B{index}"} for index in range(1, 40)}
    done = finalize(built, mode="role", max_chars=200, previous=None)
    assert done.truncated and len(done.snapshot) <= 200 and done.snapshot.endswith(TRUNCATION_MARKER)
    shown = [line for line in done.snapshot.splitlines() if line.startswith("- ")]
    assert len(done.refs) == len(shown) == done.stats["refs"] == done.stats["interactive"]
    assert done.stats["lines"] == len(done.snapshot.split("\n")) and done.stats["chars"] == len(done.snapshot)


def test_normalize_ref_accepts_the_spellings_models_copy() -> None:
    assert [normalize_ref(raw) for raw in ("@e12", "ref=e12", "[ref=e12]", " e12 ", 12, "ax3")] == [
        "e12",
        "e12",
        "e12",
        "e12",
        "12",
        "ax3",
    ]
    assert normalize_ref(None) == normalize_ref(True) == ""


def test_flatten_ax_tree_is_depth_first_and_bounded() -> None:
    nodes: list[dict[str, Any]] = [
        {"nodeId": "1", "role": {"value": "RootWebArea"}, "name": {"value": "T"}, "childIds": ["2", "3"]},
        {"nodeId": "2", "role": {"value": "button"}, "name": {"value": "A"}, "backendDOMNodeId": 7, "childIds": ["4"]},
        {"nodeId": "3", "role": {"value": "textbox"}, "name": {"value": ""}, "value": {"value": "x"}},
        {"nodeId": "4", "role": {"value": "StaticText"}, "name": {"value": "A"}},
    ]
    flat = flatten_ax_tree(nodes, 10)
    assert [(node["ref"], node["role"], node["depth"]) for node in flat] == [
        ("ax1", "RootWebArea", 0),
        ("ax2", "button", 1),
        ("ax3", "StaticText", 2),
        ("ax4", "textbox", 1),
    ]
    assert flat[1]["backendDOMNodeId"] == 7 and flat[3]["value"] == "x"
    assert len(flatten_ax_tree(nodes, 2)) == 2
