"""What the runner writes when an agent step ends (spec §5.2): its reasoning, its row, what it remembered.

One ``StepRecorder`` per run. Besides the feed rows it feeds the answer store the step's reads as evidence,
marks a done that answers a change request, arms lean state from the step's actions, and keeps the turn's
step summaries (the review reads them) and step errors (how the turn ends reads them).
"""

from __future__ import annotations

from typing import Any

from browser_use import Agent

from openbrowse.agent.lean_state import LeanState
from openbrowse.agent.replies.chat import CallRecord
from openbrowse.agent.review.loop import ReviewLoop
from openbrowse.agent.structured.output import StructuredOutput
from openbrowse.agent.turns.feed import RunFeed
from openbrowse.agent.turns.history import TurnHistory
from openbrowse.agent.turns.steps import failed_step_entry, step_entry
from openbrowse.domain.feed import EventCategory, MessageType

REASONING_LIMIT = 6000


class StepRecorder:
    def __init__(
        self,
        feed: RunFeed,
        history: TurnHistory,
        structured: StructuredOutput,
        review: ReviewLoop,
        lean: LeanState,
    ) -> None:
        self._feed = feed
        self._history = history
        self._structured = structured
        self._review = review
        self._lean = lean
        self.summaries: list[str] = []
        """This turn's step summaries; the list grows while review rounds run."""
        self.errors: list[str | None] = []
        """This turn's step errors, one per recorded step (None for a step that went well)."""
        self._version_at_start = 0

    def new_turn(self) -> None:
        self.summaries = []
        self.errors = []

    def step_started(self) -> None:
        self._version_at_start = self._structured.version

    async def record(self, agent: Agent[Any, Any], calls: list[CallRecord]) -> str:
        """Write the step that just ended, given the agent calls it made; returns its summary."""
        for call in calls:
            if call.thinking:
                await self._feed.event(
                    EventCategory.REASONING,
                    "model_reasoning",
                    f"Reasoned for {call.duration:.1f}s",
                    reasoning=call.thinking[:REASONING_LIMIT],
                    durationSeconds=round(call.duration, 1),
                )
        item = self._history.latest()
        step = agent.state.n_steps - 1
        if item is None or item.metadata is None or item.metadata.step_number != step:
            error = next((str(call.error) for call in calls if call.error), "The step produced no result")
            entry = failed_step_entry(step, sum(call.duration for call in calls), error)
            self.errors.append(error)
        elif item.model_output is None:
            error = next((r.error for r in item.result if r.error), None) or "The model returned no usable reply"
            entry = failed_step_entry(step, item.metadata.duration_seconds, error)
            self.errors.append(error)
        else:
            entry = step_entry(
                step=step, duration=item.metadata.duration_seconds, model_output=item.model_output, results=item.result
            )
            self.errors.append(next((r.error for r in item.result if r.error), None))
            await self._remember_events(item.model_output, len(item.result))
            self._observe(item, entry.data)
        self.summaries.append(entry.summary)
        executed = (entry.data or {}).get("actions", []) if entry.type is not MessageType.BROWSER_ACTION_ERROR else []
        self._lean.after_step(executed, item.state.url if item is not None else None)
        await self._feed.append(entry)
        return entry.summary

    def _observe(self, item: Any, data: dict[str, Any] | None) -> None:
        """Evidence from the step's reads; ``coverage`` when it wrote to the store (one version per write)."""
        actions = (data or {}).get("actions") or []
        self._structured.observe(actions, [r.extracted_content for r in item.result], getattr(item.state, "url", None))
        if data is None:
            return
        if self._structured.version != self._version_at_start:
            data["coverage"] = self._structured.coverage()
        baseline = self._review.baseline
        if baseline is not None and data.get("action") == "done":
            changed = self._structured.answer_snapshot(self._history.last_done_text()) != baseline
            data["reviewReply"] = "resubmitted" if changed else "replied"

    async def _remember_events(self, model_output: Any, executed: int) -> None:
        for action in (model_output.action or [])[:executed]:
            params = action.model_dump(exclude_unset=True).get("remember")
            if isinstance(params, dict):
                await self._feed.event(
                    EventCategory.MEMORY,
                    "remember",
                    f"{params.get('key')} = {params.get('value')}",
                    key=params.get("key"),
                )
