"""Recognising an agent step among the calls browser-use makes to the model.

Upstream: browser-use 0.13.x, ``browser_use.agent.views.AgentOutput``. The agent builds its per-agent output type
with ``AgentOutput.type_with_custom_actions`` (or its ``_no_thinking`` / ``_flash_mode`` variants), each a
subclass of ``AgentOutput``; every other structured call (compaction, extraction, judge) uses another model.
"""

from __future__ import annotations

from browser_use.agent.views import AgentOutput


def is_agent_output(output_format: type | None) -> bool:
    """Whether ``output_format`` is the output type of an agent step."""
    return isinstance(output_format, type) and issubclass(output_format, AgentOutput)
