"""Property: any sequence of valid writes leaves a store whose content validates against the schema."""

from __future__ import annotations

import contextlib
from typing import Any

import jsonschema
from hypothesis import given, settings, strategies as st

from openbrowse.agent.structured.answer_store import AnswerStore, StoreError
from openbrowse.agent.structured.evidence import EvidenceCorpus
from openbrowse.agent.structured.schema_model import convert

SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "$defs": {
        "Item": {
            "type": "object",
            "additionalProperties": False,
            "properties": {
                "name": {"type": "string"},
                "itemUrl": {"type": "string"},
                "level": {"type": "string", "enum": ["junior", "senior"]},
                "count": {"type": ["integer", "null"]},
                "score": {"type": "number"},
                "tags": {"type": "array", "items": {"type": "string"}},
                "open": {"anyOf": [{"type": "boolean"}, {"type": "null"}]},
            },
            "required": ["name", "count"],
        }
    },
    "properties": {
        "items": {"type": "array", "items": {"$ref": "#/$defs/Item"}},
        "source": {"type": ["string", "null"]},
        "total": {"type": "integer"},
    },
    "required": ["items", "source"],
}

names = st.text(min_size=1, max_size=12).filter(lambda s: s.strip() != "")
items = st.fixed_dictionaries(
    {"name": names, "count": st.one_of(st.none(), st.integers(-5, 5))},
    optional={
        "itemUrl": st.integers(0, 30).map(lambda n: f"https://site.example/i/{n}"),
        "level": st.sampled_from(["junior", "SENIOR", "Junior "]),
        "score": st.floats(allow_nan=False, allow_infinity=False, width=32),
        "tags": st.lists(st.text(max_size=5), max_size=3),
        "open": st.one_of(st.none(), st.booleans()),
    },
)
writes = st.lists(
    st.one_of(
        st.tuples(st.just("add"), items),
        st.tuples(st.just("update"), st.tuples(st.integers(0, 6), items)),
        st.tuples(st.just("set_source"), st.one_of(st.none(), names)),
        st.tuples(st.just("set_total"), st.integers(0, 100)),
        st.tuples(st.just("remove"), st.lists(st.integers(0, 6), min_size=1, max_size=2)),
        st.tuples(st.just("absent"), st.sampled_from(["score", "tags", "total"])),
    ),
    max_size=25,
)


def apply(store: AnswerStore, op: str, arg: Any) -> None:
    if op == "add":
        store.add_item(arg)
    elif op == "update":
        store.update_item(arg[0], arg[1])
    elif op == "set_source":
        store.set_field("source", arg)
    elif op == "set_total":
        store.set_field("total", arg)
    elif op == "remove":
        store.remove_items(arg, "duplicate")
    else:
        store.mark_absent([arg], "not published")


@settings(max_examples=80, deadline=None)
@given(writes)
def test_any_sequence_of_writes_keeps_the_store_schema_valid(sequence: list[tuple[str, Any]]) -> None:
    evidence = EvidenceCorpus()
    evidence.add_page("https://site.example/levels", "levels: junior and senior")
    for n in range(31):
        evidence.add_page(f"https://site.example/i/{n}", f"item {n}")
    store = AnswerStore(convert(SCHEMA), evidence)
    for op, arg in sequence:
        with contextlib.suppress(StoreError):  # a refused write leaves the store as it was
            apply(store, op, arg)
        output, problems = store.final_output()
        assert problems == []
        jsonschema.validate(output, SCHEMA)
        assert output["items"] == [{**item, "open": item.get("open")} for item in store.items]
