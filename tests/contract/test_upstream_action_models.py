"""What ``openbrowse.upstream.action_models`` assumes of browser-use 0.13.x, checked against the installed one: the
per-step update sets exactly the four models from the actions matching the URL, and the wrapper keeps them only
while those actions and models are unchanged."""

from __future__ import annotations

import inspect
from types import SimpleNamespace
from typing import Any

from browser_use import Agent, Tools
from browser_use.tools.registry.service import Registry

from openbrowse.upstream.action_models import actions_for, keep_unchanged_action_models


def upstream_update() -> Any:
    method = Agent._update_action_models_for_page
    return getattr(method, "__wrapped__", method)


def stand_in_agent() -> SimpleNamespace:
    return SimpleNamespace(tools=Tools(), settings=SimpleNamespace(flash_mode=False, use_thinking=True))


def test_the_step_updates_the_models_from_the_page_url() -> None:
    assert "await self._update_action_models_for_page(browser_state_summary.url)" in inspect.getsource(
        Agent._prepare_context
    )
    assert "self.registry._match_domains(action.domains, page_url)" in inspect.getsource(Registry.create_action_model)


def test_the_constructor_builds_the_models_from_the_unfiltered_actions() -> None:
    source = inspect.getsource(Agent._setup_action_models)
    assert "self.tools.registry.create_action_model()" in source
    assert "if action.domains is None:" in inspect.getsource(Registry.create_action_model)


async def test_upstreams_update_sets_exactly_the_four_models() -> None:
    agent = stand_in_agent()
    before = set(vars(agent))
    await upstream_update()(agent, "https://example.com/")
    assert set(vars(agent)) - before == {"ActionModel", "AgentOutput", "DoneActionModel", "DoneAgentOutput"}


async def test_models_are_kept_while_the_actions_are_the_same_and_rebuilt_otherwise() -> None:
    keep_unchanged_action_models()
    keep_unchanged_action_models()  # idempotent
    update = Agent._update_action_models_for_page
    agent = stand_in_agent()
    Agent._setup_action_models(agent)  # type: ignore[arg-type]
    built = agent.AgentOutput
    await update(agent, "https://example.com/")  # type: ignore[arg-type]
    first = agent.AgentOutput
    assert first is built  # no filtered action matches: the constructor's models hold
    await update(agent, "https://example.org/other")  # type: ignore[arg-type]
    assert agent.AgentOutput is first

    agent.AgentOutput = agent.DoneAgentOutput  # the last-step path
    await update(agent, "https://example.org/other")  # type: ignore[arg-type]
    assert agent.AgentOutput is not agent.DoneAgentOutput
    rebuilt = agent.AgentOutput

    @agent.tools.registry.action("Only on example.net.", domains=["example.net"])
    async def net_only() -> str:
        return "net"

    assert "net_only" not in dict(actions_for(agent, "https://example.org/"))
    assert "net_only" in dict(actions_for(agent, "https://example.net/"))
    await update(agent, "https://example.org/")  # type: ignore[arg-type]
    assert agent.AgentOutput is rebuilt
    await update(agent, "https://example.net/")  # type: ignore[arg-type]
    assert agent.AgentOutput is not rebuilt
    assert "net_only" in str(agent.AgentOutput.model_json_schema())
