"""The current turn's part of the agent's history: browser-use keeps every turn of a run in one list."""

from __future__ import annotations

from typing import Any

from browser_use import Agent
from browser_use.agent.views import ActionResult, AgentHistory


class TurnHistory:
    def __init__(self) -> None:
        self._agent: Agent[Any, Any] | None = None
        self._start = 0

    def begin(self, agent: Agent[Any, Any]) -> None:
        """A turn starts on ``agent``: what it recorded so far belongs to earlier turns."""
        self._agent = agent
        self._start = len(agent.history.history)

    def items(self) -> list[AgentHistory]:
        if self._agent is None:
            return []
        return self._agent.history.history[self._start :]

    def latest(self) -> AgentHistory | None:
        """The newest history item when it belongs to this turn, else None."""
        if self._agent is None:
            return None
        history = self._agent.history.history
        return history[-1] if len(history) > self._start else None

    def last_done(self) -> ActionResult | None:
        """This turn's latest ``done`` result (review rounds can add more than one), else None."""
        return next((r for item in reversed(self.items()) for r in item.result if r.is_done), None)

    def last_done_text(self) -> str:
        done = self.last_done()
        return (done.extracted_content or "") if done is not None else ""
