"""Shared pieces of the llm integration tests: settings pointing at the fake provider, an AgentOutput type."""

from __future__ import annotations

import dataclasses
from functools import cache
from typing import TYPE_CHECKING, Any, TypeVar

from browser_use import Tools
from browser_use.agent.views import AgentOutput
from browser_use.llm.messages import BaseMessage, SystemMessage, UserMessage

from openbrowse.config import Settings

if TYPE_CHECKING:
    from tests.fakes.llm_server import FakeProvider

M = TypeVar("M")


def fake_settings(fake: FakeProvider, **overrides: Any) -> Settings:
    values: dict[str, Any] = {
        "ANTHROPIC_API_KEY": "sk-ant-fake",
        "OPENAI_API_KEY": "sk-fake",
        "ANTHROPIC_BASE_URL": fake.anthropic_base_url,
        "OPENAI_BASE_URL": fake.openai_base_url,
        "OPENAI_API_STYLE": "responses",
    }
    values.update(overrides)
    return Settings(**values)


@cache
def agent_output_type() -> type[AgentOutput]:
    """browser-use's real dynamic AgentOutput with the default action set."""
    return AgentOutput.type_with_custom_actions(Tools().registry.create_action_model())


def messages(token: str) -> list[BaseMessage]:
    return [
        SystemMessage(content="You are a browser agent. Reply in the requested format."),
        UserMessage(content=f"<browser_state>\n[5]<a id=about />\n\tAbout us\n</browser_state>\nTask token {token}"),
    ]


def without_retries(model: M, **changes: Any) -> M:
    """The same client with SDK retries off (and any other field changed), for fast fault tests."""
    assert dataclasses.is_dataclass(model)
    assert not isinstance(model, type)
    return dataclasses.replace(model, max_retries=0, **changes)
