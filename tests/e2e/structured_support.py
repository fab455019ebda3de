"""Shared parts of the structured-output end-to-end tests: a small product schema, feed filters, script helpers."""

from __future__ import annotations

import json
from typing import Any

from tests.e2e.agent_support import data_of
from tests.fakes.llm_script import agent_step

PRODUCTS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "shop": {"type": "string"},
        "products": {
            "type": "array",
            "items": {
                "type": "object",
                "additionalProperties": False,
                "properties": {"name": {"type": "string"}, "price": {"type": "number"}},
                "required": ["name", "price"],
            },
        },
    },
    "required": ["products"],
}
BLUE = {"name": "Blue Widget", "price": 42}
RED = {"name": "Red Gadget", "price": 17.5}
PROSE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"answer": {"anyOf": [{"type": "string"}, {"type": "integer"}]}},
    "required": ["answer"],
}
"""A genuine union: no store can hold it, so the run is in prose mode (spec §13.1)."""


def add_products(*items: dict[str, Any]) -> dict[str, Any]:
    return agent_step([{"add_item": {"item": item}} for item in items], next="Write the products to the output.")


def write_result_file(value: Any) -> dict[str, Any]:
    """The agent saves its answer with browser-use's own ``write_file`` as ``result.json``."""
    return agent_step(
        {"write_file": {"file_name": "result.json", "content": json.dumps(value)}}, next="Save the answer."
    )


def events(feed: list[dict[str, Any]], category: str, action: str) -> list[dict[str, Any]]:
    return [
        m
        for m in feed
        if m["type"] == "event" and data_of(m)["category"] == category and data_of(m)["action"] == action
    ]


def completions(feed: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [m for m in feed if m["type"] == "completion"]
