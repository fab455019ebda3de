"""AgentRunner: browser-use's Agent driven turn by turn, with our feed, goal, cost cap and fault handling.

It receives everything by parameter (a connected BrowserSession, the chat models, a feed sink and a small
callback object for persistence) and returns a TurnOutcome per turn; it never touches SQL or subprocesses.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import tempfile
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any, Protocol

from browser_use import Agent, BrowserSession, Tools
from browser_use.llm.base import BaseChatModel

from openbrowse.agent import census
from openbrowse.agent.budget import TurnSpend, over_budget
from openbrowse.agent.capsolver import CapSolverSettings
from openbrowse.agent.chat import AgentCallLog, AgentChatModel
from openbrowse.agent.code_stream import CodeStreamer
from openbrowse.agent.lean_state import LeanState
from openbrowse.agent.netpolicy import NetworkRules
from openbrowse.agent.outcome import (
    clip_output,
    completed,
    count_recovered,
    not_completed,
)
from openbrowse.agent.preflight import collapse
from openbrowse.agent.prompts import MAX_ACTIONS_PER_STEP, system_prompt
from openbrowse.agent.reformat import reformat_once
from openbrowse.agent.reviewer import ReviewContext, Reviewer, RoundResult, dissent
from openbrowse.agent.steps import failed_step_entry, step_entry
from openbrowse.agent.structured import StructuredOutput
from openbrowse.agent.timeouts import TIMEOUTS
from openbrowse.agent.tools import ToolContext, register_tools
from openbrowse.agent.tools.clipboard import Clipboard, capture_start_url
from openbrowse.agent.tools.pacing import active_run
from openbrowse.agent.tools.solve_captcha import CaptchaSolver
from openbrowse.domain.activity import NO_ACTIVITY, ActivityKind, ActivityReporter
from openbrowse.domain.failures import Failure, FailureKind
from openbrowse.domain.feed import EventCategory, FeedEntry, FeedSink, MessageType
from openbrowse.domain.ids import SessionId
from openbrowse.domain.money import format_usd
from openbrowse.domain.runs import Salvage, TurnEnding, TurnOutcome
from openbrowse.llm.failures import classify, is_provider_failure

logger = logging.getLogger(__name__)

STEPS_PER_TURN = 500
START_URL_PROBE_TIMEOUT = 5.0
PERSISTENT_PROVIDER_FAILURES = 2
UNUSABLE_REPLIES = 1
"""Steps abandoned with unusable replies before the turn ends; each step already made up to three calls."""
NON_RETRYABLE_STATUSES = frozenset({400, 401, 403, 404, 422})
CONTINUATION_NOTE = (
    "FOLLOW-UP: the browser is exactly as you left it. Look at where you already are before navigating, and "
    "resolve pronouns (it, that, them) from the conversation so far.\n\n"
)


class RunCallbacks(Protocol):
    """Persistence the runner needs, provided by the session layer."""

    async def step_finished(self, summary: str) -> None:
        """One agent step ended: persist the step count, token and cost totals."""

    def total_cost(self) -> Decimal:
        """The session's spend so far (LLM + CAPTCHA), including this turn."""

    async def ceiling(self) -> Decimal | None:
        """The current cost ceiling, read fresh so a raised cap binds at once."""

    async def captcha_spent(self, usd: Decimal) -> None:
        """A CAPTCHA solve cost ``usd``: add it to the session's CAPTCHA and total cost at once."""


@dataclass(frozen=True, slots=True)
class RunSpec:
    session_id: SessionId
    files_dir: Path
    output_schema: dict[str, Any] | None = None
    sensitive_data: dict[str, str] | None = None
    system_prompt_extension: str | None = None
    network: NetworkRules = field(default_factory=NetworkRules)
    captcha: CapSolverSettings | None = None
    codeview_url: str | None = None
    """This server's code tab page (spec §11.3); None shows code in the activity stream and feed only."""

    @property
    def captcha_solver(self) -> bool:
        return self.captcha is not None


class BudgetExceeded(Exception):
    """The cost cap fired at the end of a step."""

    def __init__(self, total: Decimal, ceiling: Decimal) -> None:
        super().__init__(f"Cost ${format_usd(total)} exceeded budget ${format_usd(ceiling)}")
        self.total = total
        self.ceiling = ceiling


class ProviderGaveUp(Exception):
    """The model provider kept failing; the original error is the ``__cause__``."""


_TEMP_DIR_LOCK = threading.Lock()


@contextlib.contextmanager
def temp_dir_inside(folder: Path) -> Iterator[None]:
    """browser-use creates scratch dirs under the temp dir while constructing objects; keep them in ``folder``.

    The temp dir is process-wide and engines run on threads of their own: the lock keeps two runs from restoring
    each other's folder. The body must not await (it holds a thread lock).
    """
    with _TEMP_DIR_LOCK:
        previous = tempfile.tempdir
        tempfile.tempdir = str(folder)
        try:
            yield
        finally:
            tempfile.tempdir = previous


class AgentRunner:
    def __init__(
        self,
        spec: RunSpec,
        browser_session: BrowserSession,
        llm: BaseChatModel,
        sink: FeedSink,
        callbacks: RunCallbacks,
        *,
        activity: ActivityReporter = NO_ACTIVITY,
        judge_llm: BaseChatModel | None = None,
    ) -> None:
        self._spec = spec
        self._browser = browser_session
        self._log = AgentCallLog()
        self._activity = activity
        self._code = CodeStreamer(browser_session, spec.codeview_url, activity, self._code_write_event)
        self._llm = AgentChatModel(llm, self._log, activity, self._code)
        self._sink = sink
        self._callbacks = callbacks
        self._clipboard = Clipboard()
        self._agent: Agent[Any, Any] | None = None
        self._spend = TurnSpend(carried=Decimal(0))
        self._turn_start = 0
        self._turn_errors: list[str | None] = []
        self._lean = LeanState()
        self._structured = StructuredOutput(spec.output_schema, spec.files_dir)
        self._judge_llm = judge_llm
        self._reviewer = Reviewer(judge_llm, self._judge_event) if judge_llm is not None else None
        self._step_summaries: list[str] = []
        self._review_baseline: str | None = None
        self._step_version_at_start = 0
        self._captcha = CaptchaSolver(spec.captcha, callbacks.captcha_spent) if spec.captcha is not None else None

    @property
    def clipboard(self) -> Clipboard:
        return self._clipboard

    @property
    def activity(self) -> ActivityReporter:
        """Where tools report long phases (``Reading 6 pages``, ``Running scrape.py``) and code as it is written."""
        return self._activity

    @property
    def structured(self) -> StructuredOutput:
        """The answer store (when the schema converts) and evidence: also what a sandbox binds."""
        return self._structured

    async def _event(self, category: EventCategory, action: str, summary: str, **data: Any) -> None:
        await self._sink.append(self._spec.session_id, FeedEntry.event(category, action, summary, **data))

    async def _code_write_event(self, summary: str, file: str) -> None:
        await self._event(EventCategory.CODE, "write", summary, file=file)

    # -- a turn ------------------------------------------------------------------------------------------------
    async def run_turn(self, task: str, *, goal: str, preamble: str | None = None) -> TurnOutcome:
        """Run one dispatch to its end. Raises only for fatal errors; cancellation propagates."""
        self._log.goal = goal
        self._clipboard.seed("goal", goal)
        await self._event(EventCategory.GOAL, "goal", goal)
        text = self._task_text(task, goal, preamble)
        self._spend = TurnSpend(carried=self._callbacks.total_cost())
        self._turn_errors = []
        self._lean.disarm()  # a new turn starts from the full state
        self._step_summaries = []
        self._review_baseline = None
        self._structured.new_turn()
        if self._reviewer is not None:
            self._reviewer.last_verdict = None
        if self._captcha is not None:
            self._captcha.new_turn()
        agent = self._agent
        if agent is None:
            agent = self._agent = self._build_agent(text)
        else:
            agent.add_new_task(CONTINUATION_NOTE + text)
        self._turn_start = len(agent.history.history)
        outcome = await self._drive(agent, task, goal, agent.state.n_steps - 1 + STEPS_PER_TURN)
        await self._dissent(outcome)
        return outcome

    async def _drive(self, agent: Agent[Any, Any], task: str, goal: str, max_steps: int) -> TurnOutcome:
        try:
            with active_run():
                await agent.run(max_steps=max_steps, on_step_start=self._on_step_start, on_step_end=self._on_step_end)
                try:
                    await self._review(agent, task, goal, max_steps)
                except Exception as exc:
                    if isinstance(exc, BudgetExceeded):
                        raise
                    await self._review_failed(exc)  # the done already reached stands
        except BudgetExceeded as stop:
            return await self._budget_outcome(stop)
        except ProviderGaveUp as gave_up:
            cause = gave_up.__cause__ or gave_up
            unusable = classify(cause).kind is FailureKind.INVALID_OUTPUT
            salvaged = await self._store_complete_outcome() if unusable else None
            return salvaged or await self._fatal(cause)
        except Exception as exc:
            return await self._fatal(exc)
        finally:
            self._activity.finish()
        return await self._finished_outcome(agent, max_steps)

    def _task_text(self, task: str, goal: str, preamble: str | None) -> str:
        text = f"{preamble}\n\n{task}" if preamble else task
        text = f"{text}\n\nGOAL: {goal}"
        return text + self._structured.task_suffix()

    def _build_agent(self, text: str) -> Agent[Any, Any]:
        tools: Tools[Any] = Tools()
        register_tools(
            tools,
            ToolContext(
                session_id=self._spec.session_id,
                files_dir=self._spec.files_dir,
                clipboard=self._clipboard,
                sink=self._sink,
                network=self._spec.network,
                captcha_solver=self._spec.captcha_solver,
                captcha=self._captcha,
                store=self._structured.store,
                code_view=self._code,
            ),
            before_guard=[lambda registry: self._structured.register(registry, self._gate_event)],
        )
        start_url = self._clipboard.get("startUrl")
        extension = "\n\n".join(p for p in (self._spec.system_prompt_extension, self._structured.prompt_block()) if p)
        prompt = system_prompt(
            extension=extension or None,
            action_names=list(tools.registry.registry.actions),
            solver=self._spec.captcha_solver,
            start_url=start_url,
        )
        census.track("tools", tools)
        census.track("browserSessions", self._browser)
        with temp_dir_inside(self._spec.files_dir):
            agent: Agent[Any, Any] = Agent(
                task=text,
                llm=self._llm,
                browser_session=self._browser,
                tools=tools,
                sensitive_data=self._spec.sensitive_data,  # type: ignore[arg-type]
                override_system_message=prompt,
                max_actions_per_step=MAX_ACTIONS_PER_STEP,
                use_judge=False,
                calculate_cost=False,
                directly_open_url=True,
                enable_signal_handler=False,
                file_system_path=str(self._spec.files_dir / "agent"),
                llm_timeout=int(TIMEOUTS.llm_call),
                step_timeout=int(TIMEOUTS.step),
                display_files_in_done_text=False,
            )
        census.track("agents", agent)
        return agent

    # -- hooks -------------------------------------------------------------------------------------------------
    async def _on_step_start(self, agent: Agent[Any, Any]) -> None:
        self._step_version_at_start = self._structured.version
        self._log.step = agent.state.n_steps
        self._activity.begin("Preparing next step", ActivityKind.PREPARING, step=agent.state.n_steps)
        await self._code.close()  # a tab left by an interrupted step never becomes the page a step looks at
        await self._lean.before_step(self._browser)
        if self._log.reminder_due():
            completed_steps = agent.state.n_steps - 1
            await self._event(
                EventCategory.GOAL, "goal", f"Goal reminder (step {completed_steps})", goal=self._log.goal
            )

    async def _on_step_end(self, agent: Agent[Any, Any]) -> None:
        await self._code.close()  # the script's action was never reached, or the guard refused it
        self._lean.discard(self._browser)
        summary = await self._record_step(agent)
        await self._capture_start_url()
        await self._callbacks.step_finished(summary)
        self._spend.record_step(self._callbacks.total_cost())
        await self._check_budget()
        self._raise_if_provider_gave_up()

    async def _check_budget(self) -> None:
        """Spec §16.2, against the ceiling read fresh from the row; also before a review round (§14)."""
        total = self._callbacks.total_cost()
        ceiling = await self._callbacks.ceiling()
        if over_budget(total, ceiling, self._spend):
            assert ceiling is not None
            raise BudgetExceeded(total, ceiling)

    async def _record_step(self, agent: Agent[Any, Any]) -> str:
        calls = self._log.take()
        for call in calls:
            if call.thinking:
                await self._event(
                    EventCategory.REASONING,
                    "model_reasoning",
                    f"Reasoned for {call.duration:.1f}s",
                    reasoning=call.thinking[:6000],
                    durationSeconds=round(call.duration, 1),
                )
        history = agent.history.history
        item = history[-1] if len(history) > self._turn_start else None
        step = agent.state.n_steps - 1
        if item is None or item.metadata is None or item.metadata.step_number != step:
            error = next((str(call.error) for call in calls if call.error), "The step produced no result")
            entry = failed_step_entry(step, sum(call.duration for call in calls), error)
            self._turn_errors.append(error)
        elif item.model_output is None:
            error = next((r.error for r in item.result if r.error), None) or "The model returned no usable reply"
            entry = failed_step_entry(step, item.metadata.duration_seconds, error)
            self._turn_errors.append(error)
        else:
            entry = step_entry(
                step=step, duration=item.metadata.duration_seconds, model_output=item.model_output, results=item.result
            )
            self._turn_errors.append(next((r.error for r in item.result if r.error), None))
            await self._remember_events(item.model_output, len(item.result))
            self._observe(item, entry.data)
        self._step_summaries.append(entry.summary)
        executed = (entry.data or {}).get("actions", []) if entry.type is not MessageType.BROWSER_ACTION_ERROR else []
        self._lean.after_step(executed, item.state.url if item is not None else None)
        await self._sink.append(self._spec.session_id, entry)
        return entry.summary

    def _observe(self, item: Any, data: dict[str, Any] | None) -> None:
        """Evidence from the step's reads; ``coverage`` when it wrote to the store (one version per write)."""
        actions = (data or {}).get("actions") or []
        self._structured.observe(actions, [r.extracted_content for r in item.result], getattr(item.state, "url", None))
        if data is None:
            return
        if self._structured.version != self._step_version_at_start:
            data["coverage"] = self._structured.coverage()
        if self._review_baseline is not None and data.get("action") == "done":
            changed = self._structured.answer_snapshot(self._last_done_text()) != self._review_baseline
            data["reviewReply"] = "resubmitted" if changed else "replied"

    async def _remember_events(self, model_output: Any, executed: int) -> None:
        for action in (model_output.action or [])[:executed]:
            params = action.model_dump(exclude_unset=True).get("remember")
            if isinstance(params, dict):
                await self._event(
                    EventCategory.MEMORY,
                    "remember",
                    f"{params.get('key')} = {params.get('value')}",
                    key=params.get("key"),
                )

    async def _capture_start_url(self) -> None:
        """A task without a URL gets ``startUrl`` from the first real page the agent reached (spec §11.5)."""
        if self._clipboard.get("startUrl") is not None:
            return
        try:
            url = await asyncio.wait_for(self._browser.get_current_page_url(), timeout=START_URL_PROBE_TIMEOUT)
        except Exception:
            return
        if capture_start_url(self._clipboard, url):
            await self._event(EventCategory.MEMORY, "startUrl", f"startUrl: {url}")

    def _raise_if_provider_gave_up(self) -> None:
        """End the turn early on a persistent provider fault or replies that stay unusable.

        browser-use would otherwise retry failing steps until it runs out, and end "out of steps" with the
        cause lost; the SDK has already retried each call, so two failed steps in a row count as persistent.
        """
        last = self._log.last_error
        if last is None:
            return
        failure = classify(last)
        streak = self._log.consecutive_errors
        if is_provider_failure(last):
            if streak >= PERSISTENT_PROVIDER_FAILURES or failure.status_code in NON_RETRYABLE_STATUSES:
                raise ProviderGaveUp(f"The model provider kept failing: {last}") from last
        elif failure.kind is FailureKind.INVALID_OUTPUT and streak >= UNUSABLE_REPLIES:
            raise ProviderGaveUp(f"The model's replies stayed unusable: {last}") from last

    # -- endings -----------------------------------------------------------------------------------------------
    async def _finished_outcome(self, agent: Agent[Any, Any], max_steps: int) -> TurnOutcome:
        items = agent.history.history[self._turn_start :]
        done = next((r for item in reversed(items) for r in item.result if r.is_done), None)
        if done is not None:
            text = done.extracted_content or ""
            schema = self._spec.output_schema
            structured = self._structured.structured_result(text) if done.success else None
            if structured is not None and not structured[1] and self._structured.prose:
                structured = await self._reformat(self._structured.review_text(text), structured)
            errors = self._turn_errors[:-1] if self._turn_errors else []
            outcome = completed(
                text=self._structured.text_output(text) if done.success else text,
                agent_success=done.success,
                schema=schema,
                structured=structured,
                recovered=count_recovered(errors),
            )
            if not done.success:
                outcome = dataclasses.replace(outcome, output=self._structured.failed_output(text))
        elif (salvaged := await self._store_complete_outcome()) is not None:
            return salvaged
        else:
            out_of_steps = agent.state.n_steps > max_steps
            unusable = self._log.last_error is not None and classify(self._log.last_error).kind is (
                FailureKind.INVALID_OUTPUT
            )
            outcome = not_completed(out_of_steps=out_of_steps, unusable_replies=unusable)
            outcome = dataclasses.replace(outcome, output=self._structured.failed_output(""))
        await self._completion(outcome.summary, outcome.output)
        return outcome

    async def _completion(self, summary: str, output: Any) -> None:
        await self._sink.append(
            self._spec.session_id,
            FeedEntry(MessageType.COMPLETION, summary, {"output": clip_output(output)}),
        )

    async def _budget_outcome(self, stop: BudgetExceeded) -> TurnOutcome:
        salvage = await self.salvage()
        summary = f"Stopped: {stop}. {salvage.kept}"
        await self._completion(summary, salvage.output)
        return TurnOutcome(
            ending=TurnEnding.BUDGET,
            summary=summary,
            output=salvage.output,
            is_task_successful=salvage.is_task_successful,
            failure=Failure(FailureKind.BUDGET_EXCEEDED),
            release_browser=True,
        )

    async def _fatal(self, exc: BaseException) -> TurnOutcome:
        failure = classify(exc)
        message = collapse(str(exc)) or type(exc).__name__
        logger.warning("Turn of session %s failed: %s", self._spec.session_id, message)
        await self._sink.append(
            self._spec.session_id,
            FeedEntry(
                MessageType.BROWSER_ACTION_ERROR,
                f"Fatal error: {message[:200]}",
                {"errorFull": message[:6000], "traceback": f"{type(exc).__name__}: {message}"[:6000]},
            ),
        )
        return TurnOutcome(
            ending=TurnEnding.ERROR,
            summary=f"Fatal error: {message[:300]}",
            output=self._structured.failed_output(""),  # what the store gathered, never a success
            is_task_successful=False,
            failure=failure,
            release_browser=True,
        )

    async def _store_complete_outcome(self) -> TurnOutcome | None:
        """§13.7: the turn ended without done (steps exhausted, unusable replies) but the store is schema-valid."""
        complete = self._structured.store_complete()
        if complete is None:
            return None
        output, gate_passed = complete
        await self._judge_event(
            "storeComplete",
            "Run ended without done, but the output store is schema-valid — recorded as delivered",
            {"gatePassed": gate_passed},
        )
        summary = "Run ended without done; the output store was schema-valid, so it stands as the answer."
        await self._completion(summary, output)
        return TurnOutcome(ending=TurnEnding.FINISHED, summary=summary, output=output, is_task_successful=True)

    async def salvage(self) -> Salvage:
        """What an interrupted turn keeps (spec §13.8): the store when non-empty, else the agent's result.json,
        else (stopped while its done was under review) that done's output."""
        done = self._last_done()
        reached = done.extracted_content if done is not None and done.success else None
        return self._structured.salvage(reached)

    async def _reformat(self, text: str, structured: tuple[Any, bool]) -> tuple[Any, bool]:
        """Prose mode: one reformat call when the done text does not validate (its cost counts)."""
        if self._judge_llm is None or self._spec.output_schema is None:
            return structured
        value, valid = await reformat_once(self._judge_llm, text, self._spec.output_schema)
        return (value, True) if valid else structured

    # -- structured output and review ----------------------------------------------------------------------------
    async def _gate_event(self, summary: str, passed: bool, found: list[str]) -> None:
        await self._event(EventCategory.SCHEMA, "completeness", summary, passed=passed, deficiencies=found)

    async def _judge_event(self, action: str, summary: str, data: dict[str, Any]) -> None:
        await self._event(EventCategory.JUDGE, action, summary, **data)

    def _last_done(self) -> Any:
        agent = self._agent
        if agent is None:
            return None
        items = agent.history.history[self._turn_start :]
        return next((r for item in reversed(items) for r in item.result if r.is_done), None)

    def _last_done_text(self) -> str:
        done = self._last_done()
        return (done.extracted_content or "") if done is not None else ""

    async def _review(self, agent: Agent[Any, Any], task: str, goal: str, max_steps: int) -> None:
        """Spec §14: review a successful-looking done; change requests re-enter the agent as continuations."""
        done = self._last_done()
        if self._reviewer is None or done is None or not done.success:
            return

        async def resume(message: str) -> RoundResult:
            await self._check_budget()  # the judge's cost counts: no further round once the cap is reached
            self._review_baseline = self._structured.answer_snapshot(self._last_done_text())
            before = len(agent.history.history)
            agent.add_new_task(message)
            await agent.run(max_steps=max_steps, on_step_start=self._on_step_start, on_step_end=self._on_step_end)
            latest = self._last_done()
            fresh = any(r.is_done for item in agent.history.history[before:] for r in item.result)
            steps = len(agent.history.history) - before
            return RoundResult(steps=steps, done_ok=bool(fresh and latest is not None and latest.success))

        context = ReviewContext(
            task=task,
            goal=goal,
            done_text=lambda: self._structured.review_text(self._last_done_text()),
            steps=lambda: list(self._step_summaries),
            answer=lambda: self._structured.answer_snapshot(self._last_done_text()),
        )
        await self._reviewer.review(context, resume)

    async def _review_failed(self, exc: BaseException) -> None:
        cause = exc.__cause__ if isinstance(exc, ProviderGaveUp) and exc.__cause__ is not None else exc
        message = collapse(str(cause)) or type(cause).__name__
        logger.warning("A review round of session %s failed: %s", self._spec.session_id, message)
        await self._judge_event(
            "review",
            f"Review round failed ({message[:200]}) — stopping the review and recording the standing result",
            {"verdict": "error", "error": message[:2000]},
        )

    async def _dissent(self, outcome: TurnOutcome) -> None:
        if self._reviewer is None:
            return
        note = dissent(self._reviewer.last_verdict, outcome.is_task_successful)
        if note is not None:
            await self._judge_event(
                "dissent",
                f"Reviewer's last verdict ({note['verdict']}) differs from the recorded outcome ({note['recorded']})",
                note,
            )
