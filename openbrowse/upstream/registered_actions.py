"""Wrapping the function of an action registered with browser-use's ``Tools``, or the registry's dispatcher.

Upstream: browser-use 0.13.x, ``browser_use.tools.registry.service.Registry`` keeps ``registry.actions``
(``{name: RegisteredAction}``), and ``Registry.execute_action`` calls ``RegisteredAction.function`` with
``params=`` and the special parameters as keywords each time an action runs, so replacing that attribute
changes what the action does from then on. ``Tools.act`` calls ``self.registry.execute_action(...)`` through
the instance, so an instance attribute of that name takes every action's call first.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import BaseModel

if TYPE_CHECKING:
    from browser_use import Tools
    from browser_use.tools.registry.views import RegisteredAction

ActionFunction = Callable[..., Any]
ExecuteAction = Callable[..., Awaitable[Any]]
DefinedAction = TypeVar("DefinedAction", bound=Callable[..., Awaitable[Any]])


def register_action(
    tools: Tools[Any], description: str, *, param_model: type[BaseModel]
) -> Callable[[DefinedAction], DefinedAction]:
    """A typed ``@tools.action(description, param_model=...)``.

    ``Tools.action`` has no return annotation, so used directly as a decorator it would erase the function's type.
    This registers the function the same way (the registry keeps its own normalised copy) and returns it unchanged.
    """
    register = tools.action(description, param_model=param_model)

    def decorator(function: DefinedAction) -> DefinedAction:
        register(function)
        return function

    return decorator


def registered_actions(tools: Tools[Any]) -> Mapping[str, RegisteredAction]:
    """``{name: action}`` of every action registered with ``tools``."""
    return tools.registry.registry.actions


def wrap_action(tools: Tools[Any], name: str, wrap: Callable[[ActionFunction], ActionFunction]) -> bool:
    """Replace the function of the registered action ``name`` by ``wrap(its function)``; ``False`` if absent."""
    action = tools.registry.registry.actions.get(name)
    if action is None:
        return False
    action.function = wrap(action.function)
    return True


def wrap_execute_action(tools: Tools[Any], wrap: Callable[[ExecuteAction], ExecuteAction]) -> None:
    """Route every action call of ``tools`` through ``wrap(the registry's execute_action)``."""
    registry = tools.registry
    registry.execute_action = wrap(registry.execute_action)  # type: ignore[method-assign,assignment]
