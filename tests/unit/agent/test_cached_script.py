"""A cached script's output template (spec §27.3): the final page's texts become slots, values placeholders."""

from __future__ import annotations

import ast
import json

from openbrowse.agent.cache.replay import replay_source
from openbrowse.agent.cache.script import CachedScript, Step, render_output, template_output, with_placeholders

PAGE = [
    ("/html/body", "Blue Widget\nPrice: 42.00 EUR"),
    ("/html/body/h1", "Blue Widget"),
    ("/html/body/p/span", "42.00"),
]


def test_text_output_takes_its_values_from_the_page() -> None:
    output, elements = template_output("Blue Widget costs 42.00", PAGE, ["Blue Widget"])
    assert output == "{{e0}} costs {{e1}}"
    assert elements == ["/html/body/h1", "/html/body/p/span"]
    assert render_output(output, ["Red Gadget"], ["Red Gadget", "17.50"]) == "Red Gadget costs 17.50"


def test_structured_output_keeps_its_shape_and_types() -> None:
    output, elements = template_output({"name": "Blue Widget", "price": 42.0, "in_stock": True}, PAGE, [])
    assert elements == ["/html/body/h1"]
    assert output["in_stock"] is True
    rendered = render_output(output, [], ["Red Gadget"])
    assert rendered["name"] == "Red Gadget" and rendered["in_stock"] is True


def test_a_value_not_on_the_page_becomes_its_placeholder() -> None:
    assert with_placeholders("https://shop/search?q=Blue Widget", ["Blue Widget"]) == "https://shop/search?q={{0}}"
    output, _ = template_output("Searched for Teal Thing", PAGE, ["Teal Thing"])
    assert render_output(output, ["Pink Thing"], []) == "Searched for Pink Thing"


def test_a_script_round_trips_and_its_program_carries_the_values_as_data() -> None:
    script = CachedScript(
        template="Find {{0}}",
        steps=(Step("navigate", url="https://shop/"), Step("type", xpath="/html/body/input", text="{{0}}")),
        output="{{e0}}",
        elements=("/html/body/h1",),
    )
    assert CachedScript.from_json(script.to_json()) == script
    assert CachedScript.from_json('{"version": 99}') is None
    value = "Robert'); import os; os.system('x"
    source = replay_source(script, [value])
    compile(source, "scripts/x.py", "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)  # as the script host does
    line = next(line for line in source.splitlines() if line.startswith("STEPS = json.loads("))
    steps = json.loads(ast.literal_eval(line.removeprefix("STEPS = json.loads(").removesuffix(")")))
    assert steps[1]["text"] == value  # the value is data, never code
