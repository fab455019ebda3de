"""The three reply cards (spec §10.4): ``what_i_see``, ``plan_to_goal``, ``next_move``.

They are required in the JSON schema the model sees and optional when validating, so a model that omits one
never fails a step. The emitted property order puts ``action`` early so it is generated first. Unambiguous shape
slips are coerced before validation (``reply_shapes``).
"""

from __future__ import annotations

import copy
from typing import Any, cast

from pydantic import BaseModel, Field, create_model, model_validator

from openbrowse.agent.replies.shapes import coerce_and_record

CARD_FIELDS = ("what_i_see", "plan_to_goal", "next_move")
CARD_LIMIT = 1500
_LEADING = ("thinking", "action", *CARD_FIELDS, "evaluation_previous_goal", "memory", "next_goal")
_DESCRIPTIONS = {
    "what_i_see": "One sentence: what the current page shows that matters for the task.",
    "plan_to_goal": "One sentence: the remaining path from here to the goal.",
    "next_move": "One sentence: what this step's actions do and why.",
}
_CARDS_ATTRIBUTE = "_openbrowse_with_cards"
"""The card-carrying subclass is kept on its base class, so both are freed together when the agent goes."""
_SCHEMA_ATTRIBUTE = "_openbrowse_card_schema"


def _reorder(schema: dict[str, Any]) -> dict[str, Any]:
    properties: dict[str, Any] = schema.get("properties", {})
    ordered = {name: properties[name] for name in _LEADING if name in properties}
    ordered.update({name: value for name, value in properties.items() if name not in ordered})
    schema["properties"] = ordered
    required = [name for name in schema.get("required", []) if name not in CARD_FIELDS]
    schema["required"] = required + [name for name in CARD_FIELDS if name not in required]
    return schema


def with_cards(output_format: type[BaseModel]) -> type[BaseModel]:
    """A subclass of browser-use's dynamic AgentOutput carrying the three cards (cached per base class)."""
    cached: type[BaseModel] | None = output_format.__dict__.get(_CARDS_ATTRIBUTE)
    if cached is not None:
        return cached

    class _CardSchema(output_format):  # type: ignore[valid-type,misc]
        @classmethod
        def model_json_schema(cls, *args: Any, **kwargs: Any) -> dict[str, Any]:
            # Built once per class and call shape: generating it costs ~10 ms of CPU on every model call.
            key = repr((args, sorted(kwargs.items())))
            schemas: dict[str, dict[str, Any]] = cls.__dict__.get(_SCHEMA_ATTRIBUTE) or {}
            if key not in schemas:
                schemas[key] = _reorder(super().model_json_schema(*args, **kwargs))
                setattr(cls, _SCHEMA_ATTRIBUTE, schemas)
            return copy.deepcopy(schemas[key])

        @model_validator(mode="before")
        @classmethod
        def _coerce_shapes(cls, data: Any) -> Any:
            return coerce_and_record(data, cls)

    fields: dict[str, Any] = {
        name: (str | None, Field(default=None, description=_DESCRIPTIONS[name])) for name in CARD_FIELDS
    }
    model = cast(
        "type[BaseModel]",
        create_model(output_format.__name__, __base__=_CardSchema, __module__=output_format.__module__, **fields),
    )
    setattr(output_format, _CARDS_ATTRIBUTE, model)
    return model


def cards_of(output: object) -> dict[str, str]:
    """The non-empty cards of a parsed reply, clipped for the feed."""
    cards: dict[str, str] = {}
    for name, key in zip(CARD_FIELDS, ("see", "plan", "next"), strict=True):
        value = getattr(output, name, None)
        if isinstance(value, str) and value.strip():
            cards[key] = value.strip()[:CARD_LIMIT]
    return cards


def prepare_schema(output_format: type[BaseModel]) -> None:
    """Build the card-carrying model and its JSON schema now (blocking: CPU-bound, tens to hundreds of ms), so the
    first model call finds both cached; the runner calls it on a thread while the browser session starts."""
    with_cards(output_format).model_json_schema()
