"""Default replies of the fake LLM provider: a minimal valid instance of whatever the request asked for."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tests.fakes.llm_agent_steps import DEFAULT_DONE_TEXT, done, verdict

if TYPE_CHECKING:
    from tests.fakes.llm_request import LLMRequest

DEFAULT_TEXT = "This is a short reply from the fake LLM provider."


def _resolve(schema: dict[str, Any], root: dict[str, Any]) -> dict[str, Any]:
    seen = 0
    while "$ref" in schema and seen < 32:
        target: Any = root
        for part in str(schema["$ref"]).lstrip("#/").split("/"):
            target = target.get(part, {}) if isinstance(target, dict) else {}
        schema = target if isinstance(target, dict) else {}
        seen += 1
    return schema


def example_for_schema(schema: dict[str, Any], root: dict[str, Any] | None = None, name: str = "") -> Any:
    """A small value that validates against a JSON schema (defaults, first enum, first non-null variant ...)."""
    root = root if root is not None else schema
    schema = _resolve(schema, root)
    if "default" in schema:
        return schema["default"]
    if "const" in schema:
        return schema["const"]
    if schema.get("enum"):
        return schema["enum"][0]
    for key in ("anyOf", "oneOf"):
        variants = [_resolve(v, root) for v in schema.get(key, [])]
        if any(v.get("type") == "null" for v in variants):
            return None
        if variants:
            return example_for_schema(variants[0], root, name)
    if schema.get("allOf"):
        merged: dict[str, Any] = {}
        for part in schema["allOf"]:
            merged.update(_resolve(part, root))
        return example_for_schema(merged, root, name)
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind == "object" or "properties" in schema:
        props: dict[str, Any] = schema.get("properties", {})
        return {key: example_for_schema(props.get(key, {}), root, key) for key in schema.get("required", [])}
    if kind == "array":
        count = int(schema.get("minItems", 0))
        return [example_for_schema(schema.get("items", {}), root, name) for _ in range(count)]
    if kind == "integer":
        return int(schema.get("minimum", 0))
    if kind == "number":
        return float(schema.get("minimum", 0))
    if kind == "boolean":
        return True
    if kind == "null":
        return None
    return DEFAULT_DONE_TEXT if name == "text" else f"fake {name or 'value'}"


def default_agent_step(schema: dict[str, Any] | None) -> dict[str, Any]:
    """A ``done`` step fitted to the request's AgentOutput schema (or the project's default shape)."""
    if not schema:
        return done()
    step: dict[str, Any] = example_for_schema(schema)
    step["action"] = [_done_action(schema)]
    return step


def _done_action(schema: dict[str, Any]) -> dict[str, Any]:
    items = _resolve(_resolve(schema.get("properties", {}).get("action", {}), schema).get("items", {}), schema)
    for variant in items.get("anyOf", []) + items.get("oneOf", []):
        variant = _resolve(variant, schema)
        params_schema = variant.get("properties", {}).get("done")
        if params_schema is not None:
            params = example_for_schema(params_schema, schema, "done")
            if isinstance(params, dict):
                params["success"] = True
                if "text" in params:
                    params["text"] = DEFAULT_DONE_TEXT
            return {"done": params}
    return {"done": {"text": DEFAULT_DONE_TEXT, "success": True}}


def default_reply(request: LLMRequest) -> dict[str, Any] | str:
    """What an unscripted request gets: a ``done`` step for agent steps, a schema example for other structured
    requests, and a short sentence for text requests."""
    if request.is_agent_step:
        return default_agent_step(request.schema)
    if request.is_review:
        return verdict(True)
    if request.schema is not None:
        value = example_for_schema(request.schema)
        return value if isinstance(value, dict) else {"value": value}
    if request.schema_name is not None:  # json_object without a schema
        return {"answer": DEFAULT_TEXT}
    return DEFAULT_TEXT
