"""Clients, schemas and page state shared by the fake LLM provider's tests."""

from __future__ import annotations

from collections.abc import AsyncIterable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import anthropic
import openai
from anthropic.types import MessageParam, ToolParam
from browser_use import Tools
from browser_use.agent.views import AgentOutput
from pydantic import BaseModel

if TYPE_CHECKING:
    from tests.fakes.llm_server import FakeProvider

STATE = """<agent_history>step 1</agent_history>
<browser_state>
Current tab: 2B21
Interactive elements:
[Start of page]
[5]<a id=old />
\tOld page link
</browser_state>
<browser_state>
<page_stats>2 links, 4 interactive</page_stats>
Interactive elements:
[Start of page]
Spike Shop
[91]<a id=about />
\tAbout us
*[94]<div role=button />
\tShow product details
\t[95]<a href=/more />
\t\tRead more
\tPrice 42.00 EUR
|SHADOW(open)|[71]<input name=q placeholder=Search products />
|scroll element[97]<button type=submit />
\tSearch
[End of page]
</browser_state>"""


class Weather(BaseModel):
    city: str
    temperature: int


def anthropic_client(fake: FakeProvider, **kw: Any) -> anthropic.AsyncAnthropic:
    kw.setdefault("max_retries", 0)
    return anthropic.AsyncAnthropic(base_url=fake.anthropic_base_url, api_key="sk-ant-test", **kw)


def openai_client(fake: FakeProvider, **kw: Any) -> openai.AsyncOpenAI:
    kw.setdefault("max_retries", 0)
    return openai.AsyncOpenAI(base_url=fake.openai_base_url, api_key="sk-test", **kw)


async def drain(stream: AsyncIterable[Any], into: list[Any]) -> None:
    async for item in stream:
        into.append(item)


def agent_output_type() -> type[AgentOutput]:
    return AgentOutput.type_with_custom_actions(Tools().registry.create_action_model())


WEATHER_TOOL: ToolParam = {
    "name": "Weather",
    "description": "weather",
    "input_schema": Weather.model_json_schema(),
}
USER: list[MessageParam] = [{"role": "user", "content": "weather please TOKEN-A"}]
Item = TypeVar("Item")


def nth(items: Sequence[object], index: int, kind: type[Item]) -> Item:
    """``items[index]``, which must be a ``kind`` (a content block or output item of a reply)."""
    item = items[index]
    assert isinstance(item, kind), items
    return item
