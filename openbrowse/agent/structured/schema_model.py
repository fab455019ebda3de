"""An ``outputSchema`` turned into a validation model (spec §13.1): typed nodes that coerce and validate values.

Only the documented subset converts: objects, arrays, scalars, nullable unions, string enums, ``$ref``/``$defs``
and ``additionalProperties``. Anything else raises :class:`SchemaUnsupported`, which switches the run to prose
mode. String guards (URLs, emails, UUIDs, ids) come from ``format`` or from the property's name.
"""

from __future__ import annotations

import json
import re
import uuid
from dataclasses import dataclass, field
from typing import Any, Literal

Kind = Literal["object", "array", "string", "integer", "number", "boolean"]
Guard = Literal["url", "email", "uuid", "id"]

_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")
_URL_NAMES = ("url", "uri", "href", "link")
_URL_SUFFIXES = ("Url", "URL", "Uri", "URI", "Href", "HREF", "Link", "LINK")
ID_LIMIT = 128
_SCALARS = frozenset({"string", "integer", "number", "boolean"})


class SchemaUnsupported(Exception):
    """The schema is valid JSON Schema but outside the subset a store can hold."""


@dataclass(frozen=True, slots=True)
class Node:
    kind: Kind
    nullable: bool = False
    description: str | None = None
    enum: tuple[str, ...] | None = None
    guard: Guard | None = None
    fields: dict[str, Field] = field(default_factory=dict)
    additional: bool = True
    items: Node | None = None


@dataclass(frozen=True, slots=True)
class Field:
    name: str
    node: Node
    required: bool


def is_empty(value: Any) -> bool:
    return value is None or value == "" or value == [] or value == {}


# -- conversion -----------------------------------------------------------------------------------------------
def convert(schema: dict[str, Any]) -> Node:
    """The validation model of ``schema``; raises :class:`SchemaUnsupported` outside the subset."""
    node = _Converter(schema).node(schema, name="", depth=0)
    if node.kind != "object" or node.nullable:
        raise SchemaUnsupported("the top level must be an object")
    return node


class _Converter:
    def __init__(self, root: dict[str, Any]) -> None:
        self._root = root

    def _resolve(self, schema: dict[str, Any]) -> dict[str, Any]:
        hops = 0
        while "$ref" in schema:
            ref = schema["$ref"]
            if not isinstance(ref, str) or not ref.startswith("#/") or hops > 32:
                raise SchemaUnsupported(f"unresolved $ref {ref!r}")
            target: Any = self._root
            for part in ref[2:].split("/"):
                if not isinstance(target, dict) or part not in target:
                    raise SchemaUnsupported(f"unresolved $ref {ref!r}")
                target = target[part]
            if not isinstance(target, dict):
                raise SchemaUnsupported(f"unresolved $ref {ref!r}")
            schema = {**target, **{k: v for k, v in schema.items() if k != "$ref"}}
            hops += 1
        return schema

    def node(self, schema: Any, *, name: str, depth: int) -> Node:
        if depth > 24:
            raise SchemaUnsupported("the schema nests too deeply")
        if not isinstance(schema, dict):
            raise SchemaUnsupported("a schema node is not an object")
        schema = self._resolve(schema)
        nullable = False
        for key in ("anyOf", "oneOf"):
            if key in schema:
                branches = [self._resolve(b) for b in schema[key] if isinstance(b, dict)]
                real = [b for b in branches if b.get("type") != "null"]
                if len(real) != 1:
                    raise SchemaUnsupported(f"a genuine union ({key}) at {name or 'top level'}")
                nullable = len(real) < len(branches)
                merged = {k: v for k, v in schema.items() if k != key}
                inner = self.node({**real[0], **merged}, name=name, depth=depth + 1)
                return _with_nullable(inner, nullable or inner.nullable)
        if "allOf" in schema or "not" in schema:
            raise SchemaUnsupported("allOf / not are not supported")
        kind_value = schema.get("type")
        if isinstance(kind_value, list):
            kinds = [k for k in kind_value if k != "null"]
            nullable = len(kinds) < len(kind_value)
            if len(kinds) != 1:
                raise SchemaUnsupported(f"a multi-type union at {name or 'top level'}")
            kind_value = kinds[0]
        if kind_value is None:
            kind_value = "object" if "properties" in schema else "array" if "items" in schema else None
        if kind_value is None and ("enum" in schema or "format" in schema):
            kind_value = "string"
        description = schema.get("description") if isinstance(schema.get("description"), str) else None
        if kind_value == "object":
            return self._object(schema, nullable, description, depth)
        if kind_value == "array":
            items = self.node(schema.get("items", {"type": "string"}), name=name, depth=depth + 1)
            return Node("array", nullable=nullable, description=description, items=items)
        if kind_value in _SCALARS:
            return self._scalar(schema, kind_value, name, nullable, description)
        raise SchemaUnsupported(f"unsupported type {kind_value!r} at {name or 'top level'}")

    def _object(self, schema: dict[str, Any], nullable: bool, description: str | None, depth: int) -> Node:
        properties = schema.get("properties") or {}
        required = set(schema.get("required") or [])
        fields: dict[str, Field] = {}
        for prop, sub in properties.items():
            if not _IDENTIFIER.match(prop):
                raise SchemaUnsupported(f"property name {prop!r} is not an identifier")
            fields[prop] = Field(prop, self.node(sub, name=prop, depth=depth + 1), prop in required)
        additional = schema.get("additionalProperties", True) is not False
        return Node("object", nullable=nullable, description=description, fields=fields, additional=additional)

    @staticmethod
    def _scalar(schema: dict[str, Any], kind: str, name: str, nullable: bool, description: str | None) -> Node:
        enum = schema.get("enum")
        choices: tuple[str, ...] | None = None
        if enum is not None:
            values = [v for v in enum if v is not None]
            nullable = nullable or len(values) < len(enum)
            if kind != "string" or not all(isinstance(v, str) for v in values):
                raise SchemaUnsupported(f"a non-string enum at {name}")
            choices = tuple(values)
        guard = guard_of(name, schema.get("format")) if kind == "string" and choices is None else None
        return Node(kind, nullable=nullable, description=description, enum=choices, guard=guard)  # type: ignore[arg-type]


def _with_nullable(node: Node, nullable: bool) -> Node:
    if node.nullable == nullable:
        return node
    return Node(node.kind, nullable, node.description, node.enum, node.guard, node.fields, node.additional, node.items)


def guard_of(name: str, fmt: Any) -> Guard | None:
    """The string guard for a property: from ``format`` when one is given, else from the name."""
    if fmt is not None:
        return {"uri": "url", "url": "url", "email": "email", "uuid": "uuid"}.get(str(fmt))  # type: ignore[return-value]
    if name.lower() in _URL_NAMES or name.endswith(_URL_SUFFIXES):
        return "url"
    if name.endswith("Email") or name.lower() == "email":
        return "email"
    if name.endswith("Uuid") or name.lower() == "uuid":
        return "uuid"
    if name.endswith(("Id", "ID")) or name == "id":
        return "id"
    return None


# -- coercion and validation -----------------------------------------------------------------------------------
def coerce(node: Node, value: Any) -> Any:
    """Unambiguous repairs before validation: trim strings, match enums case-insensitively, booleans as
    ``"true"``/``"false"`` for string fields, JSON strings parsed for list/object fields."""
    if value is None:
        return None
    if node.kind == "string":
        if isinstance(value, bool):
            return "true" if value else "false"
        if isinstance(value, str):
            value = value.strip()
            if node.enum is not None and value not in node.enum:
                match = next((c for c in node.enum if c.lower() == value.lower()), None)
                return match if match is not None else value
        return value
    if node.kind in ("array", "object") and isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return value
    if node.kind == "array" and isinstance(value, list) and node.items is not None:
        return [coerce(node.items, v) for v in value]
    if node.kind == "object" and isinstance(value, dict):
        return {k: coerce(node.fields[k].node, v) if k in node.fields else v for k, v in value.items()}
    return value


def errors(node: Node, value: Any, path: str = "", *, partial: bool = False) -> list[str]:
    """Why ``value`` does not fit ``node`` (empty when it does); paths like ``jobs[3].title``.

    ``partial`` is the live check of a write: unset (missing or null) fields are allowed, they are what the
    coverage line and the completeness gate report; shapes, enums, guards and unknown keys are still checked.
    """
    where = path or "value"
    if value is None:
        return [] if node.nullable or partial else [f"{where} must not be null"]
    if node.kind == "object":
        if not isinstance(value, dict):
            return [f"{where} must be an object"]
        found: list[str] = []
        for name, spec in node.fields.items():
            sub = f"{path}.{name}" if path else name
            if name not in value or (value[name] is None and not spec.required):
                if spec.required and not partial:
                    found.append(f"{sub} is required")
                continue
            found += errors(spec.node, value[name], sub, partial=partial)
        if not node.additional:
            found += [f"{where} has unknown key {key!r}" for key in value if key not in node.fields]
        return found
    if node.kind == "array":
        if not isinstance(value, list):
            return [f"{where} must be a list"]
        assert node.items is not None
        return [e for i, v in enumerate(value) for e in errors(node.items, v, f"{path}[{i}]", partial=partial)]
    return _scalar_errors(node, value, where)


def _scalar_errors(node: Node, value: Any, where: str) -> list[str]:
    if node.kind == "boolean":
        return [] if isinstance(value, bool) else [f"{where} must be true or false"]
    if node.kind == "integer":
        ok = isinstance(value, int) and not isinstance(value, bool)
        return [] if ok else [f"{where} must be an integer"]
    if node.kind == "number":
        ok = isinstance(value, int | float) and not isinstance(value, bool)
        return [] if ok else [f"{where} must be a number"]
    if not isinstance(value, str):
        return [f"{where} must be a string"]
    if node.enum is not None and value not in node.enum:
        return [f"{where} must be one of {', '.join(node.enum)}"]
    problem = guard_problem(node.guard, value)
    return [f"{where} {problem}"] if problem else []


def guard_problem(guard: Guard | None, value: str) -> str | None:
    if guard is None or value == "":
        return None
    if guard == "url" and not re.match(r"^https?://[^\s/]+\S*$", value):
        return "must be an absolute http(s) URL"
    if guard == "email" and not _EMAIL.match(value):
        return "must be an email address"
    if guard == "uuid":
        try:
            uuid.UUID(value)
        except ValueError:
            return "must be a UUID"
    if guard == "id" and (len(value) > ID_LIMIT or re.search(r"\s", value)):
        return f"must be a single token without whitespace (at most {ID_LIMIT} chars)"
    return None


def strip_to_schema(node: Node, value: Any) -> Any:
    """``value`` in schema shape: undeclared keys removed (run-time extras stay private), unset nullables null."""
    if node.kind == "object" and isinstance(value, dict):
        if not node.fields and node.additional:
            return value  # a free-form object (no declared properties): its keys are the data
        kept = {
            k: strip_to_schema(node.fields[k].node, v)
            for k, v in value.items()
            if k in node.fields and not (v is None and not node.fields[k].required and not node.fields[k].node.nullable)
        }
        return {name: kept.get(name) for name, spec in node.fields.items() if name in kept or spec.node.nullable}
    if node.kind == "array" and isinstance(value, list) and node.items is not None:
        return [strip_to_schema(node.items, v) for v in value]
    return value


def empty_instance(node: Node) -> dict[str, Any]:
    """The store's shape at step zero: lists empty, every other field null."""
    return {name: [] if spec.node.kind == "array" else None for name, spec in node.fields.items()}


_OTHER_URL_WORDS = frozenset(
    {"apply", "application", "image", "img", "logo", "photo", "picture", "thumbnail", "icon", "video", "avatar"}
    | {"pdf", "download", "company", "website", "homepage", "map", "cv", "resume"}
)


def own_url_field(item: Node | None, answer_key: str | None = None) -> str | None:
    """The URL-guarded item field naming the item's own page: ``url``/``link``/``<item>Url``/``detailUrl``… first,
    else the first URL field not about something else (an image, a logo, an application form…)."""
    if item is None or item.kind != "object":
        return None
    candidates = [name for name, spec in item.fields.items() if spec.node.kind == "string" and spec.node.guard == "url"]
    singular = {w[:-1] if w.endswith("s") and len(w) > 3 else w for w in _name_words(answer_key or "")}
    plain = {"url", "uri", "href", "link", "page", "detail", "item", "listing", "permalink", "own", "canonical"}
    for name in candidates:
        if set(_name_words(name)) <= plain | singular:
            return name
    return next((n for n in candidates if not set(_name_words(n)) & _OTHER_URL_WORDS), None)


def _name_words(name: str) -> list[str]:
    return [w.lower() for w in re.findall(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+", name)]
