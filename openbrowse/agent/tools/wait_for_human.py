"""``wait_for_human(reason)``: the agent asks a person to take over (spec §21.5).

For what only a person can do mid-run: a login, a 2FA code, a CAPTCHA no solver handles. The session pauses the
same way as ``POST /v3/sessions/{id}/pause`` (``by: "agent"``): the pause lands before the agent's next action,
the person gets a takeover link, and when they hand back the agent's next step sees the page as they left it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from browser_use.agent.views import ActionResult
from pydantic import BaseModel, Field

from openbrowse.upstream.registered_actions import register_action

if TYPE_CHECKING:
    from browser_use import Tools

__all__ = ["AskForHuman", "register_wait_for_human"]

AskForHuman = Callable[[str], Awaitable[None]]
REASON_LIMIT = 300


class WaitForHumanParams(BaseModel):
    reason: str = Field(
        description="What the person must do, in one sentence (e.g. 'Enter the 2FA code sent to the phone')."
    )


def register_wait_for_human(tools: Tools[Any], ask: AskForHuman) -> None:
    @register_action(
        tools,
        "Pause and hand the browser to a person for something only they can do (a login, a 2FA code, a CAPTCHA). "
        "Call it alone; when they hand back, continue from the page as they left it.",
        param_model=WaitForHumanParams,
    )
    async def wait_for_human(params: WaitForHumanParams) -> ActionResult:
        reason = " ".join(params.reason.split())[:REASON_LIMIT] or "The agent asked for a person."
        await ask(reason)
        return ActionResult(
            extracted_content=f"Asked a person to take over: {reason}",
            long_term_memory=f"Waited for a person: {reason}",
        )
