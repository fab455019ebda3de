"""Schema → validation model (spec §13.1): the subset that converts, what it accepts, and prose mode."""

from __future__ import annotations

from typing import Any

import pytest

from openbrowse.agent.structured.schema_model import (
    SchemaUnsupported,
    coerce,
    convert,
    errors,
    guard_of,
    strip_to_schema,
)

JOBS: dict[str, Any] = {
    "type": "object",
    "$defs": {
        "Job": {
            "type": "object",
            "additionalProperties": False,
            "properties": {
                "title": {"type": "string", "description": "Job title"},
                "jobUrl": {"type": "string"},
                "kind": {"type": "string", "enum": ["Full-time", "Part-time"]},
                "salary": {"anyOf": [{"type": "integer"}, {"type": "null"}]},
                "tags": {"type": "array", "items": {"type": "string"}},
                "remote": {"type": ["boolean", "null"]},
            },
            "required": ["title", "jobUrl", "salary"],
        }
    },
    "properties": {
        "company": {"type": "string"},
        "jobs": {"type": "array", "items": {"$ref": "#/$defs/Job"}},
    },
    "required": ["company", "jobs"],
}


def test_ref_nested_arrays_enums_and_nullables_convert() -> None:
    model = convert(JOBS)
    job = model.fields["jobs"].node.items
    assert job is not None and job.kind == "object" and not job.additional
    assert job.fields["title"].node.description == "Job title" and job.fields["title"].required
    assert job.fields["kind"].node.enum == ("Full-time", "Part-time")
    assert job.fields["salary"].node.nullable and job.fields["salary"].node.kind == "integer"
    assert job.fields["remote"].node.nullable and not job.fields["remote"].required
    assert job.fields["tags"].node.items is not None and job.fields["tags"].node.items.kind == "string"
    assert job.fields["jobUrl"].node.guard == "url"


def test_valid_instance_passes_and_extra_keys_are_forbidden() -> None:
    model = convert(JOBS)
    good = {"company": "Acme", "jobs": [{"title": "Dev", "jobUrl": "https://a.example/1", "salary": None}]}
    assert errors(model, good) == []
    extra = {"company": "Acme", "jobs": [{"title": "Dev", "jobUrl": "https://a.example/1", "salary": 1, "x": 1}]}
    assert errors(model, extra) == ["jobs[0] has unknown key 'x'"]


def test_required_nullable_must_be_present_but_may_be_null() -> None:
    model = convert(JOBS)
    missing = {"company": "Acme", "jobs": [{"title": "Dev", "jobUrl": "https://a.example/1"}]}
    assert errors(model, missing) == ["jobs[0].salary is required"]
    assert errors(model, missing, partial=True) == []


def test_enum_and_type_errors_name_the_path() -> None:
    model = convert(JOBS)
    value = {"company": "Acme", "jobs": [{"title": 3, "jobUrl": "/rel", "salary": "x", "kind": "Gig"}]}
    assert errors(model, value) == [
        "jobs[0].title must be a string",
        "jobs[0].jobUrl must be an absolute http(s) URL",
        "jobs[0].kind must be one of Full-time, Part-time",
        "jobs[0].salary must be an integer",
    ]


def test_coercions_before_validation() -> None:
    job = convert(JOBS).fields["jobs"].node.items
    assert job is not None
    coerced = coerce(job, {"title": "  Dev ", "kind": "full-TIME", "tags": '["a", "b"]'})
    assert coerced == {"title": "Dev", "kind": "Full-time", "tags": ["a", "b"]}
    flag = convert({"type": "object", "properties": {"flag": {"type": "string"}}}).fields["flag"].node
    assert coerce(flag, True) == "true"


def test_string_guards_from_names_and_formats() -> None:
    assert guard_of("applyLink", None) == "url" and guard_of("href", None) == "url"
    assert guard_of("contactEmail", None) == "email" and guard_of("x", "email") == "email"
    assert guard_of("recordUuid", None) == "uuid" and guard_of("jobId", None) == "id"
    assert guard_of("homepageUrl", "date") is None  # an explicit other format opts out
    model = convert({"type": "object", "properties": {"jobId": {"type": "string"}, "mail": {"format": "email"}}})
    assert errors(model, {"jobId": "a b", "mail": "nope"}) == [
        "jobId must be a single token without whitespace (at most 128 chars)",
        "mail must be an email address",
    ]


def test_strip_to_schema_drops_extra_keys_and_unset_optionals() -> None:
    model = convert({"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "integer"}}})
    assert strip_to_schema(model, {"a": "x", "b": None, "scratch": 1}) == {"a": "x"}


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "array", "items": {"type": "string"}},
        {"type": "object", "properties": {"v": {"anyOf": [{"type": "string"}, {"type": "integer"}]}}},
        {"type": "object", "properties": {"v": {"$ref": "#/$defs/Missing"}}},
        {"type": "object", "properties": {"not-an-identifier": {"type": "string"}}},
        {"type": "object", "properties": {"v": {"type": ["string", "integer"]}}},
    ],
    ids=["top-level-array", "union", "unresolved-ref", "property-name", "multi-type"],
)
def test_unconvertible_schemas_switch_to_prose_mode(schema: dict[str, Any]) -> None:
    with pytest.raises(SchemaUnsupported):
        convert(schema)


def test_strip_to_schema_keeps_free_form_objects_whole() -> None:
    model = convert({"type": "object", "properties": {"rows": {"type": "array", "items": {"type": "object"}}}})
    rows = [{"name": "Blue Widget", "price": "9.99"}]
    assert strip_to_schema(model, {"rows": rows, "scratch": 1}) == {"rows": rows}


def test_one_of_null_enum_null_and_nested_arrays() -> None:
    model = convert(
        {
            "type": "object",
            "$defs": {"Cell": {"$ref": "#/$defs/Text"}, "Text": {"type": "string", "format": "uri"}},
            "properties": {
                "note": {"oneOf": [{"type": "null"}, {"type": "string"}]},
                "level": {"enum": ["low", "high", None]},
                "grid": {"type": "array", "items": {"type": "array", "items": {"$ref": "#/$defs/Cell"}}},
            },
            "required": ["note", "level", "grid"],
        }
    )
    note, level, grid = (model.fields[name].node for name in ("note", "level", "grid"))
    assert note.kind == "string" and note.nullable
    assert level.kind == "string" and level.enum == ("low", "high") and level.nullable
    assert grid.items is not None and grid.items.items is not None and grid.items.items.guard == "url"
    assert errors(model, {"note": None, "level": None, "grid": [["https://a.example/"], []]}) == []
    assert errors(model, {"note": None, "level": "mid", "grid": [["/rel"]]}) == [
        "level must be one of low, high",
        "grid[0][0] must be an absolute http(s) URL",
    ]


def test_extra_keys_are_allowed_unless_forbidden_and_required_values_are_not_null() -> None:
    open_model = convert({"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]})
    assert errors(open_model, {"name": "x", "scratch": 1}) == []
    assert errors(open_model, {"name": None}) == ["name must not be null"]
    assert errors(open_model, {}) == ["name is required"]
    closed = convert({"type": "object", "additionalProperties": False, "properties": {"name": {"type": "string"}}})
    assert errors(closed, {"name": "x", "scratch": 1}) == ["value has unknown key 'scratch'"]


def test_uuid_and_format_guards() -> None:
    model = convert(
        {
            "type": "object",
            "properties": {"recordUuid": {"type": "string"}, "home": {"type": "string", "format": "uri"}},
        }
    )
    assert errors(model, {"recordUuid": "nope", "home": "ftp://x"}) == [
        "recordUuid must be a UUID",
        "home must be an absolute http(s) URL",
    ]
    assert errors(model, {"recordUuid": "12345678-1234-5678-1234-567812345678", "home": "https://x.example"}) == []
