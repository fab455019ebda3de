"""The run's structured output as the runner sees it (spec §13.5–§13.8): outputs, salvage, result.json, the gate."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

from openbrowse.agent.structured.completeness import deficiencies
from openbrowse.agent.structured.output import AGENT_DATA, StructuredOutput

PRODUCTS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "shop": {"type": "string"},
        "products": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "name": {"type": "string"},
                    "price": {"type": "number"},
                    "releaseDate": {"type": "string"},
                },
                "required": ["name", "price"],
            },
        },
    },
    "required": ["shop", "products"],
}
PROSE: dict[str, Any] = {
    "type": "object",
    "properties": {"answer": {"anyOf": [{"type": "string"}, {"type": "integer"}]}},
}


def write_result(files: Path, value: Any, *, folder: Path = AGENT_DATA, age: float = 0.0) -> Path:
    path = files / folder / "result.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(value) + "\n")
    if age:
        stamp = time.time() - age
        os.utime(path, (stamp, stamp))
    return path


def test_store_salvage_says_what_is_kept(tmp_path: Path) -> None:
    run = StructuredOutput(PRODUCTS, tmp_path)
    assert run.store is not None
    assert run.salvage().kept == "There was no output to keep." and run.salvage().output is None
    run.store.add_item({"name": "Blue", "price": 42})
    partial = run.salvage()
    assert partial.kept == "A partial output of 1 items is kept." and not partial.is_task_successful
    assert partial.output == {"shop": None, "products": [{"name": "Blue", "price": 42}]}
    run.store.set_field("shop", "Fixture Shop")
    complete = run.salvage()
    assert (
        complete.is_task_successful
        and complete.kept == "The output store was schema-valid, so it stands as the answer."
    )


def test_without_a_store_salvage_takes_this_turns_result_file(tmp_path: Path) -> None:
    run = StructuredOutput(PROSE, tmp_path)
    assert run.store is None and run.prose
    write_result(tmp_path, {"answer": "old"}, age=60)  # an earlier turn's file
    assert run.salvage().output is None
    write_result(tmp_path, {"answer": 42})
    kept = run.salvage()
    assert kept.output == {"answer": 42} and kept.is_task_successful
    write_result(tmp_path, {"answer": [1]}, folder=Path("."))  # a script's file, newer: it wins, and is invalid
    invalid = run.salvage()
    assert invalid.output == {"answer": [1]} and not invalid.is_task_successful
    assert invalid.kept == "A partial output is kept."


def test_a_stop_during_review_keeps_the_done_already_reached(tmp_path: Path) -> None:
    prose = StructuredOutput(PROSE, tmp_path / "a")
    assert prose.salvage('Here: {"answer": 7}').output == {"answer": 7}
    assert prose.salvage('Here: {"answer": 7}').is_task_successful
    plain = StructuredOutput(None, tmp_path / "b")
    kept = plain.salvage("The answer is 7.")
    assert kept.output == "The answer is 7." and not kept.is_task_successful  # no schema: nothing to deliver against
    write_result(tmp_path / "b", {"notes": 1})
    assert plain.salvage("The answer is 7.").output == '{"notes": 1}'  # text, as the output is without a schema


def test_done_outputs_without_a_store(tmp_path: Path) -> None:
    run = StructuredOutput(PROSE, tmp_path)
    assert run.structured_result('{"answer": 1}') == ({"answer": 1}, True)
    assert run.structured_result("Saved it.") == (None, False)
    write_result(tmp_path, {"answer": 2})
    assert run.structured_result("Saved it to result.json.") == ({"answer": 2}, True)
    assert run.structured_result('{"answer": 1}') == ({"answer": 1}, True)  # a valid done text comes first
    assert "RESULT FILE (result.json" in run.review_text("Saved it.")
    plain = StructuredOutput(None, tmp_path)
    assert plain.text_output("Done.") == "Done." and plain.text_output("  ") == '{"answer": 2}'


def test_a_failed_done_keeps_what_the_store_gathered(tmp_path: Path) -> None:
    run = StructuredOutput(PRODUCTS, tmp_path)
    assert run.failed_output("Blocked by a login.") == "Blocked by a login."
    assert run.store is not None
    run.store.add_item({"name": "Blue", "price": 42})
    assert run.failed_output("Blocked.") == {"shop": None, "products": [{"name": "Blue", "price": 42}]}


def test_gate_shortcuts_absent_fields_and_a_new_turn(tmp_path: Path) -> None:
    run = StructuredOutput(PRODUCTS, tmp_path)
    assert run.store is not None and run.gate is not None
    run.store.set_field("shop", "Fixture Shop")
    run.store.add_item({"name": "Blue", "price": 42, "release_date": "2026-01-01"})
    assert deficiencies(run.store) == [
        "releaseDate empty on 1 of 1",
        "the extra key 'release_date' looks like the empty field 'releaseDate'",
        "dates usually live in JSON-LD (datePosted, validThrough)",
    ]
    assert run.gate.check() and run.store.reads_at_bounce == 0
    run.new_turn()
    assert run.store.reads_at_bounce is None and not run.gate.fired
    run.store.mark_absent(["releaseDate"], "The shop shows no release dates.")
    assert deficiencies(run.store) == []  # a field settled by mark_absent never counts
    assert run.store_complete() == (
        {"shop": "Fixture Shop", "products": [{"name": "Blue", "price": 42}]},
        True,
    )


def test_a_list_of_scalars_is_an_answer_array(tmp_path: Path) -> None:
    run = StructuredOutput(
        {"type": "object", "properties": {"emails": {"type": "array", "items": {"type": "string", "format": "email"}}}},
        tmp_path,
    )
    assert run.store is not None and run.store.answer_key == "emails"
    assert deficiencies(run.store) == ["emails: no items"]
    assert run.store.add_item("a@example.org").endswith("Coverage — emails: 1 item(s).")
    assert deficiencies(run.store) == []


def test_restore_takes_only_an_earlier_output_that_still_fits(tmp_path: Path) -> None:
    run = StructuredOutput(PRODUCTS, tmp_path)
    assert run.restore({"products": [{"name": "Blue", "price": "free"}]}) is None  # no longer fits the schema
    assert run.restore("The answer in prose.") is None and run.restore({"products": []}) is None
    coverage = run.restore({"shop": "S", "products": [{"name": "Blue", "price": 42, "scratch": 1}]})
    assert coverage == "Coverage — products: 1 item(s); filled on all: name, price; empty on all: releaseDate."
    assert json.loads((tmp_path / "output.json").read_text())["products"] == [{"name": "Blue", "price": 42}]
    assert run.restore({"shop": "Other", "products": []}) is None  # only into an empty store
    assert run.store is not None and run.store.content()["shop"] == "S"
    assert StructuredOutput(None, tmp_path / "none").restore({"shop": "S"}) is None
