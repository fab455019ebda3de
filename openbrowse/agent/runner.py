"""AgentRunner: browser-use's Agent driven turn by turn: building it, step hooks, goal reminders, pause, cost cap.

It receives everything by parameter (a connected BrowserSession, the chat models, a feed sink and a small
callback object for persistence) and returns a TurnOutcome per turn, built by ``turns/end.py`` (the review of a
done is ``review/loop.py``; each step's rows are ``turns/step_record.py``, the early stops ``turns/faults.py``);
it never touches SQL or subprocesses.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any, Protocol

from browser_use import Agent, BrowserSession, Tools
from browser_use.agent.views import AgentHistory
from browser_use.llm.base import BaseChatModel

from openbrowse.agent import census
from openbrowse.agent.captcha.capsolver import CapSolverSettings
from openbrowse.agent.code.stream import CodeStreamer
from openbrowse.agent.files.quota import DEFAULT_AREA_MB
from openbrowse.agent.files.sweep import FileSweep
from openbrowse.agent.files.temp_dir import temp_dir_inside
from openbrowse.agent.lean_state import LeanState
from openbrowse.agent.prompts import MAX_ACTIONS_PER_STEP, system_prompt
from openbrowse.agent.replies.cards import prepare_schema
from openbrowse.agent.replies.chat import AgentCallLog, AgentChatModel
from openbrowse.agent.review.loop import ReviewLoop
from openbrowse.agent.secret_typing import confine_secrets
from openbrowse.agent.structured.output import StructuredOutput
from openbrowse.agent.tools import ToolContext, register_tools
from openbrowse.agent.tools.captcha_solver import CaptchaSolver
from openbrowse.agent.tools.clipboard import Clipboard, capture_start_url
from openbrowse.agent.tools.pacing import active_run
from openbrowse.agent.tools.workspace_files import WORKSPACE_PROMPT
from openbrowse.agent.turns.budget import TurnSpend, over_budget
from openbrowse.agent.turns.end import TurnEnd
from openbrowse.agent.turns.faults import BudgetExceeded, ProviderGaveUp, raise_if_provider_gave_up, root_cause
from openbrowse.agent.turns.feed import RunFeed
from openbrowse.agent.turns.history import TurnHistory
from openbrowse.agent.turns.pause import PauseSwitch
from openbrowse.agent.turns.step_record import StepRecorder
from openbrowse.agent.turns.timeouts import TIMEOUTS
from openbrowse.domain.activity import NO_ACTIVITY, ActivityKind, ActivityReporter
from openbrowse.domain.browser_folders import BrowserFolders
from openbrowse.domain.feed import EventCategory, FeedSink
from openbrowse.domain.ids import SessionId
from openbrowse.domain.redaction import REDACTORS
from openbrowse.domain.runs import Salvage, TurnOutcome
from openbrowse.domain.scripts import ScriptRunner
from openbrowse.domain.secrets import ScopedSecrets
from openbrowse.network.policy import NetworkRules
from openbrowse.network.proxy_route import ProxyRoute
from openbrowse.upstream.anthropic_import import without_anthropic_sdk
from openbrowse.upstream.registered_actions import registered_actions

logger = logging.getLogger(__name__)

STEPS_PER_TURN = 500
START_URL_PROBE_TIMEOUT = 5.0
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

    async def human_needed(self, reason: str) -> None:
        """The agent called ``wait_for_human``: pause the session for a person (returns once asked, not landed)."""


@dataclass(frozen=True, slots=True)
class RunSpec:
    session_id: SessionId
    files_dir: Path
    output_schema: dict[str, Any] | None = None
    sensitive_data: ScopedSecrets | None = None
    system_prompt_extension: str | None = None
    network: NetworkRules = field(default_factory=NetworkRules)
    proxy: ProxyRoute | None = None
    captcha: CapSolverSettings | None = None
    codeview_url: str | None = None
    """This server's code tab page (spec §11.3); None shows code in the activity stream and feed only."""
    browser_folders: BrowserFolders | None = None
    """The slot's ``uploads/`` and ``downloads/`` (``upload_file`` stages files there, spec §24.6)."""
    file_area_mb: int = DEFAULT_AREA_MB
    """The cap of ``files_dir`` (``SLOT_DISK_MB``): copies out of the slot and script writes stay under it."""
    workspace_dir: Path | None = None
    """The attached workspace's folder (spec §27.2), the root of the agent's file actions."""
    workspace_limit_bytes: int = 0

    @property
    def captcha_solver(self) -> bool:
        return self.captcha is not None


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
        scripts: ScriptRunner | None = None,
    ) -> None:
        self._spec = spec
        self._scripts = scripts
        self._browser = browser_session
        self._feed = RunFeed(spec.session_id, sink)
        self._log = AgentCallLog()
        self._activity = activity
        self._code = CodeStreamer(
            browser_session,
            spec.codeview_url,
            activity,
            self._code_write_event,
            redact=lambda text: REDACTORS.of(spec.session_id).text(text),
        )
        self._pause = PauseSwitch()
        self._llm = AgentChatModel(llm, self._log, activity, self._code, self._pause)
        self._sink = sink
        self._callbacks = callbacks
        self._clipboard = Clipboard()
        self._agent: Agent[Any, Any] | None = None
        self._history = TurnHistory()
        self._spend = TurnSpend(carried=Decimal(0))
        self._lean = LeanState()
        self._structured = StructuredOutput(spec.output_schema, spec.files_dir)
        self._ending = TurnEnd(
            self._feed, self._structured, self._history, output_schema=spec.output_schema, judge_llm=judge_llm
        )
        self._review = ReviewLoop(judge_llm, self._feed, self._structured, self._history)
        self._steps = StepRecorder(self._feed, self._history, self._structured, self._review, self._lean)
        self._steps_at_start = 0
        self._captcha = CaptchaSolver(spec.captcha, callbacks.captcha_spent) if spec.captcha is not None else None
        self._files = FileSweep(spec.files_dir)

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

    async def sweep_files(self) -> None:
        """Hide the session's secrets in every file of its area changed since the last sweep (spec §25.3)."""
        redactor = REDACTORS.of(self._spec.session_id)
        if redactor:
            await asyncio.to_thread(self._files.sweep, redactor)

    async def salvage(self) -> Salvage:
        """What an interrupted turn keeps (spec §13.8); see ``TurnEnd.salvage``."""
        return self._ending.salvage()

    async def _code_write_event(self, summary: str, file: str) -> None:
        await self._feed.event(EventCategory.CODE, "write", summary, file=file)

    async def _gate_event(self, summary: str, passed: bool, found: list[str]) -> None:
        await self._feed.event(EventCategory.SCHEMA, "completeness", summary, passed=passed, deficiencies=found)

    # -- pause and resume (spec §21.5) ---------------------------------------------------------------------------
    def pause(self) -> None:
        """Ask the agent to stop at the next safe point (see :mod:`openbrowse.agent.turns.pause`); returns at once."""
        self._pause.request()
        if self._agent is not None:
            self._agent.pause()

    async def wait_paused(self) -> None:
        """Returns once no step runs any more."""
        await self._pause.landed()

    def resume(self, note: str) -> None:
        """Let the agent go on: its next step sees the full browser state and ``note``."""
        self._pause.release(note)
        self._lean.disarm()
        if self._agent is not None and self._agent.state.paused:
            self._agent.resume()

    @property
    def turn_items(self) -> list[AgentHistory]:
        """The current turn's history items (a cached script is made from them, spec §27.3)."""
        return self._history.items()

    # -- a turn ------------------------------------------------------------------------------------------------
    async def run_turn(self, task: str, *, goal: str, preamble: str | None = None) -> TurnOutcome:
        """Run one dispatch to its end. Raises only for fatal errors; cancellation propagates."""
        self._log.goal = goal
        self._clipboard.seed("goal", goal)
        await self._feed.event(EventCategory.GOAL, "goal", goal)
        text = self._task_text(task, goal, preamble)
        self._spend = TurnSpend(carried=self._callbacks.total_cost())
        self._lean.disarm()  # a new turn starts from the full state
        self._steps.new_turn()
        self._structured.new_turn()
        self._review.new_turn()
        if self._captcha is not None:
            self._captcha.new_turn()
        agent = self._agent
        schema: asyncio.Future[None] | None = None
        if agent is None:
            agent = self._agent = self._build_agent(text)
            # the reply schema is built on a thread while the browser session starts, not on the loop at step 1
            schema = asyncio.ensure_future(asyncio.to_thread(prepare_schema, agent.AgentOutput))
        else:
            agent.add_new_task(CONTINUATION_NOTE + text)
        self._history.begin(agent)
        try:
            outcome = await self._drive(agent, task, goal, agent.state.n_steps - 1 + STEPS_PER_TURN)
        finally:
            if schema is not None:
                await asyncio.shield(asyncio.wait({schema}))
                if not schema.cancelled() and schema.exception() is not None:
                    logger.debug("Building the reply schema ahead failed: %s", schema.exception())
        await self._review.dissent(outcome)
        return outcome

    async def _drive(self, agent: Agent[Any, Any], task: str, goal: str, max_steps: int) -> TurnOutcome:
        try:
            with active_run():
                await self._run_agent(agent, max_steps)
                try:
                    await self._review.review(
                        agent,
                        task=task,
                        goal=goal,
                        step_summaries=self._steps.summaries,
                        before_round=self._check_budget,  # the judge's cost counts: no round past the cap
                        run_round=lambda: self._run_agent(agent, max_steps),
                    )
                except Exception as exc:
                    if isinstance(exc, BudgetExceeded):
                        raise
                    await self._review.failed(root_cause(exc))  # the done already reached stands
        except BudgetExceeded as stop:
            return await self._ending.budget(str(stop))
        except ProviderGaveUp as gave_up:
            return await self._ending.provider_gave_up(root_cause(gave_up))
        except Exception as exc:
            return await self._ending.fatal(exc)
        finally:
            self._activity.finish()
        return await self._ending.finished(
            step_errors=self._steps.errors,
            out_of_steps=agent.state.n_steps > max_steps,
            last_error=self._log.last_error,
        )

    async def _run_agent(self, agent: Agent[Any, Any], max_steps: int) -> None:
        await agent.run(max_steps=max_steps, on_step_start=self._on_step_start, on_step_end=self._on_step_end)

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
                proxy=self._spec.proxy,
                captcha_solver=self._spec.captcha_solver,
                captcha=self._captcha,
                store=self._structured.store,
                code_view=self._code,
                browser_folders=self._spec.browser_folders,
                file_area_mb=self._spec.file_area_mb,
                workspace_dir=self._spec.workspace_dir,
                workspace_limit_bytes=self._spec.workspace_limit_bytes,
                scripts=self._scripts,
                ask_for_human=self._callbacks.human_needed,
            ),
            before_guard=[lambda registry: self._structured.register(registry, self._gate_event)],
        )
        confine_secrets(tools, self._spec.sensitive_data)  # typed on matching origins only, never sent
        start_url = self._clipboard.get("startUrl")
        workspace_note = WORKSPACE_PROMPT if self._spec.workspace_dir is not None else None
        parts = (self._spec.system_prompt_extension, workspace_note, self._structured.prompt_block())
        extension = "\n\n".join(p for p in parts if p)
        prompt = system_prompt(
            extension=extension or None,
            action_names=list(registered_actions(tools)),
            solver=self._spec.captcha_solver,
            start_url=start_url,
        )
        census.track("tools", tools)
        census.track("browserSessions", self._browser)
        with temp_dir_inside(self._spec.files_dir), without_anthropic_sdk():
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
        self._pause.step_started()
        self._steps_at_start = agent.state.n_steps
        self._steps.step_started()
        self._log.step = agent.state.n_steps
        self._activity.begin("Preparing next step", ActivityKind.PREPARING, step=agent.state.n_steps)
        await self._code.close()  # a tab left by an interrupted step never becomes the page a step looks at
        await self._lean.before_step(self._browser)
        if self._log.reminder_due():
            completed_steps = agent.state.n_steps - 1
            await self._feed.event(
                EventCategory.GOAL, "goal", f"Goal reminder (step {completed_steps})", goal=self._log.goal
            )

    async def _on_step_end(self, agent: Agent[Any, Any]) -> None:
        try:
            await self._step_ended(agent)
        finally:
            self._pause.step_ended()

    async def _step_ended(self, agent: Agent[Any, Any]) -> None:
        await self._code.close()  # the script's action was never reached, or the guard refused it
        self._lean.discard(self._browser)
        if self._pause.requested and agent.state.n_steps == self._steps_at_start:
            self._log.take()  # a step a pause interrupted is taken again after the resume: nothing to record
            return
        summary = await self._steps.record(agent, self._log.take())
        await self.sweep_files()
        await self._capture_start_url()
        await self._callbacks.step_finished(summary)
        self._spend.record_step(self._callbacks.total_cost())
        await self._check_budget()
        raise_if_provider_gave_up(self._log)

    async def _check_budget(self) -> None:
        """Spec §16.2, against the ceiling read fresh from the row; also before a review round (§14)."""
        total = self._callbacks.total_cost()
        ceiling = await self._callbacks.ceiling()
        if over_budget(total, ceiling, self._spend):
            assert ceiling is not None
            raise BudgetExceeded(total, ceiling)

    async def _capture_start_url(self) -> None:
        """A task without a URL gets ``startUrl`` from the first real page the agent reached (spec §11.5)."""
        if self._clipboard.get("startUrl") is not None:
            return
        try:
            url = await asyncio.wait_for(self._browser.get_current_page_url(), timeout=START_URL_PROBE_TIMEOUT)
        except Exception:
            return
        if capture_start_url(self._clipboard, url):
            await self._feed.event(EventCategory.MEMORY, "startUrl", f"startUrl: {url}")
