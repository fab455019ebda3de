"""An agent keeps its action models from step to step while the page's actions stay the same.

Upstream: browser-use 0.13.x. Every step, ``Agent._prepare_context`` awaits
``Agent._update_action_models_for_page(page_url)``, which builds new pydantic models for every registered action
(``tools.registry.create_action_model(page_url=...)``, one ``create_model`` per action and a union over them) and
new ``AgentOutput`` types from them, and sets ``ActionModel``, ``AgentOutput``, ``DoneActionModel`` and
``DoneAgentOutput``. The actions that go in are those whose ``domains`` match the URL
(``tools.registry.registry._match_domains(action.domains, page_url)``). Building the models, and then their
JSON schema for the model call (a new class each step, so no cache holds), is tens to hundreds of milliseconds
of CPU on the event loop per step (``bench/session_scaling.py``, docs/benchmarks.md).

The wrapper rebuilds only when the set of matching actions changed, or when something else replaced the models
since (the agent's last-step and after-failure paths set ``AgentOutput = DoneAgentOutput``); otherwise the
models of the previous step, built from the same actions, are kept. ``Agent._setup_action_models()`` (the
constructor's build, from the actions without a domain filter: ``create_action_model()`` with no URL) is
recorded the same way, so the first step keeps the constructor's models too when no filtered action matches.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from typing import Any

from browser_use import Agent

_MARK = "_openbrowse_keeps_models"
_BUILT = "_openbrowse_action_models"
_MODELS = ("ActionModel", "AgentOutput", "DoneActionModel", "DoneAgentOutput")

Update = Callable[[Any, str], Awaitable[None]]


def actions_for(agent: Any, page_url: str | None) -> tuple[tuple[str, int], ...]:
    """The registered actions upstream would put into the models for ``page_url``, with their identity (no URL:
    the actions without a domain filter)."""
    actions = agent.tools.registry.registry
    return tuple(
        (name, id(action))
        for name, action in actions.actions.items()
        if (action.domains is None if page_url is None else actions._match_domains(action.domains, page_url))
    )


def _key(agent: Any, page_url: str | None) -> tuple[Any, ...]:
    return (agent.settings.flash_mode, agent.settings.use_thinking, actions_for(agent, page_url))


def _models_of(agent: Any) -> tuple[Any, ...]:
    return tuple(getattr(agent, name, None) for name in _MODELS)


def keep_unchanged_action_models() -> None:
    """Install the wrapper on ``Agent`` (idempotent; before the first agent steps)."""
    upstream: Update = Agent._update_action_models_for_page
    if getattr(upstream, _MARK, False):
        return
    upstream_setup: Callable[[Any], None] = Agent._setup_action_models

    @functools.wraps(upstream_setup)
    def _setup_action_models(self: Any) -> None:
        upstream_setup(self)
        self.__dict__[_BUILT] = (_key(self, None), _models_of(self))

    @functools.wraps(upstream)
    async def _update_action_models_for_page(self: Any, page_url: str) -> None:
        key = _key(self, page_url)
        built: tuple[Any, tuple[Any, ...]] | None = self.__dict__.get(_BUILT)
        if built is not None and built[0] == key and built[1] == _models_of(self):
            return
        await upstream(self, page_url)
        self.__dict__[_BUILT] = (key, _models_of(self))

    setattr(_update_action_models_for_page, _MARK, True)
    setattr(Agent, "_update_action_models_for_page", _update_action_models_for_page)  # noqa: B010
    setattr(Agent, "_setup_action_models", _setup_action_models)  # noqa: B010
