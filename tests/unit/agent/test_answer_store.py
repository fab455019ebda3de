"""The answer store (spec §13.2–§13.5): writes, coverage lines, the guards and the gate's deficiency list."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from openbrowse.agent.structured.answer_store import AnswerStore, StoreError
from openbrowse.agent.structured.completeness import Gate, deficiencies
from openbrowse.agent.structured.evidence import EvidenceCorpus
from openbrowse.agent.structured.schema_model import convert

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "company": {"type": "string"},
        "jobs": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "title": {"type": "string"},
                    "jobUrl": {"type": "string"},
                    "kind": {"type": "string", "enum": ["Full-time", "Part-time"]},
                    "salary": {"type": ["integer", "null"]},
                },
                "required": ["title", "jobUrl"],
            },
        },
    },
    "required": ["company", "jobs"],
}


def url(n: int) -> str:
    return f"https://jobs.example/job/{n}"


def make_store(tmp_path: Path) -> AnswerStore:
    return AnswerStore(convert(SCHEMA), EvidenceCorpus(tmp_path), tmp_path)


def read(store: AnswerStore, *numbers: int, text: str = "Full-time role") -> None:
    for n in numbers:
        store.evidence.add_page(url(n), f"Job {n}. {text}")


def test_empty_store_is_mirrored_from_step_zero(tmp_path: Path) -> None:
    make_store(tmp_path)
    assert json.loads((tmp_path / "output.json").read_text()) == {"company": None, "jobs": []}


def test_write_remirrors_and_answers_with_the_coverage_line(tmp_path: Path) -> None:
    store = make_store(tmp_path)
    read(store, 1, 2)
    store.add_item({"title": "Dev", "jobUrl": url(1), "kind": "Full-time", "salary": 10})
    reply = store.add_item({"title": "Ops", "jobUrl": url(2)})
    assert reply == (
        "Added item #1. Coverage — jobs: 2 item(s); filled on all: title, jobUrl; partial: kind 1/2, salary 1/2; "
        "top-level not set: company."
    )
    assert json.loads((tmp_path / "output.json").read_text())["jobs"][1]["title"] == "Ops"
    assert store.set_field("company", " Acme ").endswith(
        "Coverage — jobs: 2 item(s); filled on all: title, jobUrl; partial: kind 1/2, salary 1/2."
    )


def test_coverage_lists_empty_and_absent_fields(tmp_path: Path) -> None:
    store = make_store(tmp_path)
    read(store, 1)
    store.add_item({"title": "Dev", "jobUrl": url(1)})
    reply = store.mark_absent(["salary"], "The site never states pay.")
    assert reply.endswith(
        "Coverage — jobs: 1 item(s); filled on all: title, jobUrl; empty on all: kind; marked absent: salary; "
        "top-level not set: company."
    )


def test_invalid_writes_are_refused_with_the_reason(tmp_path: Path) -> None:
    store = make_store(tmp_path)
    with pytest.raises(StoreError, match=r"jobs\[0\].jobUrl must be an absolute http\(s\) URL"):
        store.add_item({"title": "Dev", "jobUrl": "/job/1"})
    with pytest.raises(StoreError, match="unknown"):
        AnswerStore(
            convert(
                {
                    **SCHEMA,
                    "properties": {
                        "jobs": {
                            "type": "array",
                            "items": {**SCHEMA["properties"]["jobs"]["items"], "additionalProperties": False},
                        }
                    },
                }
            ),
            EvidenceCorpus(),
        ).add_item({"title": "x", "jobUrl": url(1), "bonus": 1})
    with pytest.raises(StoreError, match="not a top-level field"):
        store.set_field("jobs", [])
    assert store.items == []


def test_enum_values_need_evidence(tmp_path: Path) -> None:
    store = make_store(tmp_path)
    store.evidence.add_page(url(1), "Job 1. Contract: part-time")
    with pytest.raises(StoreError, match="'Full-time' is not stated on any page read this session"):
        store.add_item({"title": "Dev", "jobUrl": url(1), "kind": "full-time"})
    store.add_item({"title": "Dev", "jobUrl": url(1), "kind": "PART-TIME"})
    assert store.items[0]["kind"] == "Part-time"


def test_stub_throttle_refuses_a_third_unread_row_and_remembers_it(tmp_path: Path) -> None:
    store = make_store(tmp_path)
    store.add_item({"title": "A", "jobUrl": url(1)})
    store.add_item({"title": "B", "jobUrl": url(2)})
    with pytest.raises(StoreError, match="already 2 items whose own page was not read"):
        store.add_item({"title": "C", "jobUrl": url(3)})
    assert list(store.refused) == [url(3)]
    assert "1 refused item(s) outstanding: https://jobs.example/job/3" in deficiencies(store)
    read(store, 3)
    store.add_item({"title": "C", "jobUrl": url(3)})
    assert store.refused == {}


def test_absence_must_be_earned(tmp_path: Path) -> None:
    store = make_store(tmp_path)
    store.add_item({"title": "A", "jobUrl": url(1)})
    with pytest.raises(StoreError, match="1 item page\\(s\\) are still unread"):
        store.mark_absent(["salary"], "not published")
    read(store, 1)
    store.update_item(0, {"salary": 5})
    with pytest.raises(StoreError, match="already complete"):
        store.mark_absent(["salary"], "not published")
    with pytest.raises(StoreError, match="needs a reason"):
        store.mark_absent(["kind"], " ")
    gate = Gate(store)
    assert gate.check()  # bounces: company not set, kind empty
    with pytest.raises(StoreError, match="Nothing was read since the completeness gate bounced"):
        store.mark_absent(["kind"], "not published")
    store.evidence.add_page("https://jobs.example/about", "About us")
    assert "Marked absent: kind." in store.mark_absent(["kind"], "not published")


def test_gate_lists_exact_deficiencies_and_is_one_shot(tmp_path: Path) -> None:
    store = make_store(tmp_path)
    assert deficiencies(store) == ["company (not set)", "jobs: no items"]
    (tmp_path / "found_links.json").write_text(
        json.dumps(
            [{"index": i, "text": f"J{i}", "href": url(i)} for i in range(1, 12)]
            + [{"index": 99, "text": "ad", "href": "https://ads.example/x", "offhost": True}]
        )
    )
    gate = Gate(store)
    store.add_item({"title": "A", "jobUrl": url(1)})
    store.add_item({"title": "B", "jobUrl": url(2), "salary": 3})
    found = gate.check()
    assert found == [
        "company (not set)",
        "kind empty on 2 of 2",
        "salary empty on 1 of 2",
        "find_links kept 11 link(s) but the output has 2 item(s); not turned into items: "
        + ", ".join(url(i) for i in range(3, 11))
        + " (+1 more)",
    ]
    assert gate.check() == []  # the second done is accepted


def test_partial_fields_are_complete_once_every_page_was_read(tmp_path: Path) -> None:
    store = make_store(tmp_path)
    read(store, 1, 2)
    store.set_field("company", "Acme")
    store.add_item({"title": "A", "jobUrl": url(1), "kind": "Full-time"})
    store.add_item({"title": "B", "jobUrl": url(2), "salary": 3, "date_posted": ""})
    assert deficiencies(store) == []


def test_bulk_load_and_merge_from_files(tmp_path: Path) -> None:
    store = make_store(tmp_path)
    read(store, 1, 2)
    (tmp_path / "rows.json").write_text(json.dumps([{"title": "A", "jobUrl": url(1)}, {"title": 3, "jobUrl": url(2)}]))
    reply = store.add_items_from_file("rows.json")
    assert reply.startswith("Added 1 item(s) from rows.json. Not applied: entry 1: jobs[1].title must be a string.")
    (tmp_path / "more.json").write_text(json.dumps([{"jobUrl": url(1) + "/", "salary": 7}]))
    store.update_items_from_file("more.json")
    assert store.items == [{"title": "A", "jobUrl": url(1) + "/", "salary": 7}]
    with pytest.raises(StoreError, match=r"no saved file named nope\.json"):
        store.add_items_from_file("nope.json")


def test_update_items_reports_per_entry_failures(tmp_path: Path) -> None:
    store = make_store(tmp_path)
    read(store, 1)
    store.add_item({"title": "A", "jobUrl": url(1)})
    reply = store.update_items([{"index": 0, "fields": {"salary": 4}}, {"index": 5, "fields": {"salary": 1}}])
    assert reply.startswith("Updated 1 item(s). Not applied: update 1: There is no item #5")
    assert store.items[0]["salary"] == 4


def test_read_and_search_output_elide_long_values(tmp_path: Path) -> None:
    store = make_store(tmp_path)
    read(store, 1)
    store.add_item({"title": "x" * 400, "jobUrl": url(1)})
    view = json.loads(store.read_output().splitlines()[0])
    assert view["jobs"][0] == {"index": 0, "title": "<400 chars>", "jobUrl": url(1)}
    assert json.loads(store.search_output("job/1"))["matches"][0]["index"] == 0
    store.remove_items([0], "duplicate")
    assert store.items == []


def test_final_output_strips_extra_keys(tmp_path: Path) -> None:
    store = make_store(tmp_path)
    read(store, 1)
    store.set_field("company", "Acme")
    store.add_item({"title": "A", "jobUrl": url(1), "notes": "scratch"})
    output, problems = store.final_output()
    assert problems == [] and output == {"company": "Acme", "jobs": [{"title": "A", "jobUrl": url(1), "salary": None}]}


def test_an_answer_given_in_done_is_adopted_only_into_an_empty_store(tmp_path: Path) -> None:
    store = make_store(tmp_path)
    answer = {"company": "Acme", "jobs": [{"title": "Dev", "jobUrl": url(1), "extra": "dropped"}]}
    assert not store.adopt({"company": "Acme", "jobs": [{"title": "no url"}]})  # invalid: nothing changes
    assert store.is_empty()
    assert store.adopt(answer)
    assert json.loads((tmp_path / "output.json").read_text())["jobs"][0]["title"] == "Dev"
    output, problems = store.final_output()
    assert not problems
    assert output["jobs"][0]["jobUrl"] == url(1)
    assert "extra" not in output["jobs"][0]
    assert not store.adopt({"company": "Other", "jobs": []})  # a store with content is never overwritten
    assert store.content()["company"] == "Acme"
