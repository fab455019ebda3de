"""Cached scripts in a session's turns (spec §27.3): replay before the agent, save after it.

When caching is on for a turn (``cacheScript``, a workspace, ``@{{…}}`` parameters: :func:`caching_wanted`), the
turn first looks for the template's script in the workspace's ``scripts/``. Found, it runs in the slot's script
host (:mod:`openbrowse.agent.cache.replay`) and no model is called: its output, once it passes the check (not
empty, every value found, the output schema when there is one), is the turn's answer. When the script fails or its
output fails the check, ``autoHeal`` lets the agent run the task and the new script replaces the old one; without
it the turn ends unsuccessful (``agent_failure``) naming the step that failed. After a successful agent turn the
script is saved (or replaced). Every decision is a ``cache`` event in the feed.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import jsonschema
from browser_use import BrowserSession
from browser_use.agent.views import AgentHistory

from openbrowse.agent.cache.capture import Uncacheable, page_texts, steps_of
from openbrowse.agent.cache.replay import replay
from openbrowse.agent.cache.script import CachedScript, template_output
from openbrowse.agent.files import workspace_tree as tree
from openbrowse.domain.cache_templates import CacheTemplate, caching_wanted, parse_template
from openbrowse.domain.clock import to_wire, utc_now
from openbrowse.domain.failures import Failure, FailureKind
from openbrowse.domain.feed import EventCategory, FeedEntry
from openbrowse.domain.runs import TurnEnding, TurnOutcome
from openbrowse.domain.scripts import ScriptRunner
from openbrowse.domain.sessions import SessionRecord

__all__ = ["CachePlan", "ScriptCache"]

logger = logging.getLogger(__name__)

SCRIPT_LIMIT = 1 << 20


@dataclass(slots=True)
class CachePlan:
    template: CacheTemplate
    key: str
    auto_heal: bool
    output_schema: dict[str, Any] | None
    healing: bool = False

    @property
    def path(self) -> str:
        return f"scripts/{self.key}.json"


class ScriptCache:
    """One per run (engine): reads and writes the workspace's scripts, replays them, tells the feed."""

    def __init__(self, session_id: str, feed: Any, workspace: Path | None, limit_bytes: int) -> None:
        self._session_id = session_id
        self._feed = feed
        self._root = workspace
        self._limit = limit_bytes

    def plan(self, record: SessionRecord, task: str) -> CachePlan | None:
        template = parse_template(task)
        if self._root is None or not caching_wanted(record.cache_script, template, True):
            return None
        return CachePlan(template, template.key(record.output_schema), record.auto_heal, record.output_schema)

    async def _event(self, action: str, summary: str, **data: Any) -> None:
        await self._feed.append(self._session_id, FeedEntry.event(EventCategory.CACHE, action, summary, **data))

    async def load(self, plan: CachePlan) -> CachedScript | None:
        if self._root is None:
            return None
        raw = await asyncio.to_thread(tree.read_bytes, self._root, plan.path, SCRIPT_LIMIT)
        script = CachedScript.from_json(raw.decode("utf-8", "replace")) if raw else None
        return script if script is not None and script.template == plan.template.template else None

    async def try_replay(
        self, plan: CachePlan, runner: ScriptRunner | None, browser: BrowserSession | None, cdp_url: str | None = None
    ) -> TurnOutcome | None:
        """The turn's outcome from the cached script, or None when the agent is to run (no script, or a heal)."""
        script = await self.load(plan)
        if script is None or runner is None or browser is None:
            await self._event("miss", f"No cached script for this task yet: the agent runs it ({plan.path})")
            return None
        await self._event(
            "replay", f"Running the cached script {plan.path} ({len(script.steps)} steps)", script=plan.path
        )
        target = await _page_target(cdp_url) if cdp_url else None
        if target is None:
            await browser.start()
            target = browser.agent_focus_target_id
        result = await replay(runner, self._session_id, target, script, plan.template.values, plan.key)
        problem = f"{result.failed_step} failed: {result.error}" if not result.ok else _check(result.output, plan)
        if problem is None:
            await self._event(
                "replayed",
                f"The cached script replayed {len(script.steps)} steps without the agent",
                script=plan.path,
                steps=[step.describe(number) for number, step in enumerate(script.steps, 1)],
            )
            return TurnOutcome(
                TurnEnding.FINISHED,
                f"Done by the cached script {plan.path} (no agent step).",
                output=result.output,
                is_task_successful=True,
            )
        if plan.auto_heal:
            plan.healing = True
            await self._event("heal", f"The cached script failed ({problem}): the agent runs the task to heal it")
            return None
        await self._event("failed", f"The cached script failed: {problem}", script=plan.path)
        return TurnOutcome(
            TurnEnding.FINISHED,
            f"The cached script {plan.path} failed at {problem}",
            is_task_successful=False,
            failure=Failure(FailureKind.AGENT_FAILURE),
        )

    async def save(
        self, plan: CachePlan, outcome: TurnOutcome, items: Sequence[AgentHistory], browser: BrowserSession | None
    ) -> None:
        """After a successful agent turn: write (or replace, on a heal) the template's script."""
        if self._root is None or not outcome.is_task_successful or browser is None:
            return
        values = plan.template.values
        try:
            steps = steps_of(items, values)
        except Uncacheable as reason:
            await self._event("skipped", f"No script was saved: {reason}")
            return
        output, elements = template_output(outcome.output, await page_texts(browser), values)
        previous = await self.load(plan) if plan.healing else None
        script = CachedScript(
            template=plan.template.template,
            steps=tuple(steps),
            output=output,
            elements=tuple(elements),
            created_at=to_wire(utc_now()),
            heals=(previous.heals if previous else 0) + int(plan.healing),
        )
        data = script.to_json().encode("utf-8")
        try:
            await asyncio.to_thread(tree.write_bytes, self._root, plan.path, data, self._limit)
        except (tree.NoRoom, OSError) as exc:
            await self._event("skipped", f"The script could not be saved: {exc}")
            return
        action, verb = ("heal", "replaced") if plan.healing else ("saved", "saved")
        await self._event(action, f"Cached script {plan.path} {verb} ({len(steps)} steps)", script=plan.path)


async def _page_target(cdp_url: str) -> str | None:
    """The slot's page tab, from Chromium's target list (quicker than connecting browser-use for a replay)."""
    try:
        async with httpx.AsyncClient(timeout=10, trust_env=False) as client:
            targets = (await client.get(f"{cdp_url.rstrip('/')}/json/list")).json()
    except (httpx.HTTPError, ValueError):
        return None
    pages = [t for t in targets if isinstance(t, dict) and t.get("type") == "page"] if isinstance(targets, list) else []
    return str(pages[0]["id"]) if pages and pages[0].get("id") else None


def _check(output: Any, plan: CachePlan) -> str | None:
    """The deterministic check of a cached run's output: a problem in words, or None."""
    if output in (None, "", [], {}):
        return "the output is empty"
    if "{{" in str(output):
        return "a value of the output was not found on the page"
    if plan.output_schema is not None:
        try:
            jsonschema.validate(output, plan.output_schema)
        except jsonschema.ValidationError as exc:
            return f"the output does not match the schema ({exc.message[:200]})"
    return None


def agent_task(task: str) -> str:
    """The task as the agent sees it: ``@{{value}}`` brackets removed, the values in place."""
    return parse_template(task).agent_task
