"""AgentEngine: one run's browser and agent, from launch to close (spec §10.1).

It is the session-layer side of the agent: it builds the metered chat models, launches the slot's Chromium
while the goal pre-flight runs, connects browser-use over CDP, feeds the runner the persistence it needs
(step counts, tokens and costs written, never read back; the ceiling read from the row once per turn), and decides
each turn's preamble.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import shutil
from collections.abc import Awaitable, Callable
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any

from browser_use import BrowserSession

from openbrowse.agent.captcha.capsolver import CapSolverSettings
from openbrowse.agent.files.temp_dir import temp_dir_inside
from openbrowse.agent.preflight import follow_up_prompt, goal_sentence
from openbrowse.agent.runner import AgentRunner, RunSpec
from openbrowse.agent.tools.clipboard import start_url_of
from openbrowse.agent.turns.replay import replay_preamble
from openbrowse.config import Settings
from openbrowse.domain.activity import NO_ACTIVITY, ActivityKind, ActivityReporter
from openbrowse.domain.browser_folders import BrowserFolders
from openbrowse.domain.feed import EventCategory, FeedEntry, MessageType
from openbrowse.domain.redaction import REDACTORS
from openbrowse.domain.runs import NOTHING_KEPT, Salvage, TurnOutcome
from openbrowse.domain.sessions import SessionRecord
from openbrowse.errors import ProcessDied
from openbrowse.llm.catalog import preflight_effort, resolve_model
from openbrowse.llm.factory import build_chat_model
from openbrowse.llm.usage.costs import CallUsage, CostLedger
from openbrowse.llm.usage.metering import MeteredChatModel
from openbrowse.network.policy import NetworkRules
from openbrowse.profiles.sync import ProfileStore, ProfileSync
from openbrowse.sessions.cached_runs import CachePlan, ScriptCache, agent_task
from openbrowse.sessions.proxies import ProxyCertificates, ProxyMeter
from openbrowse.sessions.scripts import SessionScripts
from openbrowse.sessions.slot_downloads import collect_downloads, folders_of
from openbrowse.sessions.workspace_files import copy_downloads, workspace_limit, workspace_root
from openbrowse.shielding import run_shielded

if TYPE_CHECKING:
    from openbrowse.sessions.runtime import FeedLog, SessionRows, SlotEndpoints

logger = logging.getLogger(__name__)

PREFLIGHT_MAX_TOKENS = 300
RESTORED_NOTE = (
    "The output store already holds the answer of the previous turn: update it in place (update_item(s), "
    "set_field, remove_items) rather than adding those items again."
)


HumanNeeded = Callable[[str], Awaitable[None]]


class AgentEngine:
    """Implements :class:`openbrowse.sessions.runtime.Engine`."""

    def __init__(
        self,
        settings: Settings,
        record: SessionRecord,
        sessions: SessionRows,
        feed: FeedLog,
        *,
        activity: ActivityReporter = NO_ACTIVITY,
        profiles: ProfileStore | None = None,
    ) -> None:
        self._settings = settings
        self._activity = activity
        self._record = record
        self._workspace: Path | None = None
        self._cache: ScriptCache | None = None
        self._sessions = sessions
        self._feed = feed
        self._files = settings.sessions_dir / record.id
        self._ledger = CostLedger()
        self._ledger.seed(
            input_tokens=record.total_input_tokens,
            output_tokens=record.total_output_tokens,
            total_usd=record.llm_cost_usd,
        )
        self._captcha_usd = record.captcha_cost_usd
        self._steps = record.step_count
        """The session's step counter: only this engine writes it while the run lasts, so it is kept here and
        written, never read back from the row."""
        self._turn_record = record
        """The row as the current turn began (read once per turn): its cost ceiling and keep-alive."""
        resolved = resolve_model(record.llm_model)
        session_id = record.id

        def redact(text: str) -> str:
            return REDACTORS.of(session_id).text(text)

        def metered(label: str, effort: str, max_tokens: int | None = None) -> MeteredChatModel:
            model = build_chat_model(resolved, effort, settings, max_tokens=max_tokens)
            return MeteredChatModel(model, resolved.spec, self._on_usage, label=label, redact=redact)

        self._agent_llm = metered("agent", record.reasoning_effort)
        self._preflight_llm = metered("preflight", preflight_effort(resolved.spec), PREFLIGHT_MAX_TOKENS)
        self._judge_llm = metered("judge", resolved.spec.default_effort)
        self._slot: SlotEndpoints | None = None
        self._folders: BrowserFolders | None = None
        self._network = NetworkRules.from_settings(settings)
        self.proxy = ProxyMeter(settings, record)  # spec §28.1: the worker puts its route on the slot
        self._certificates = ProxyCertificates()
        self._browser: BrowserSession | None = None
        self._scripts: SessionScripts | None = None
        self._runner: AgentRunner | None = None
        self._goal: asyncio.Task[str] | None = None
        self._previous_task: str | None = None
        self._turns = 0
        self._profiles = profiles
        self._profile: ProfileSync | None = None
        self.on_human_needed: HumanNeeded | None = None
        """Set by the worker: pauses the session when the agent calls ``wait_for_human`` (spec §21.5)."""

    # -- costs -------------------------------------------------------------------------------------------------
    def _on_usage(self, call: CallUsage) -> None:
        self._ledger.record(call)

    def total_cost(self) -> Decimal:
        return self._ledger.total_usd + self._captcha_usd + self.proxy.usd()

    async def ceiling(self) -> Decimal | None:
        return self._turn_record.max_cost_usd

    async def step_finished(self, summary: str) -> None:
        self._steps += 1
        await self._sessions.update(
            self._record.id, step_count=self._steps, last_step_summary=summary, **self._cost_changes()
        )

    async def captcha_spent(self, usd: Decimal) -> None:
        self._captcha_usd += usd
        await self._sessions.update(self._record.id, captcha_cost_usd=self._captcha_usd)

    async def human_needed(self, reason: str) -> None:
        if self.on_human_needed is None:
            raise RuntimeError("No one can take over this session.")
        await self.on_human_needed(reason)

    # -- pause (spec §21.5) ------------------------------------------------------------------------------------
    async def pause(self) -> None:
        if self._runner is not None:
            self._runner.pause()

    async def wait_paused(self) -> None:
        if self._runner is not None:
            await self._runner.wait_paused()

    async def resume(self, note: str) -> None:
        if self._runner is not None:
            self._runner.resume(note)

    def _captcha_settings(self) -> CapSolverSettings | None:
        key = self._settings.CAPSOLVER_API_KEY
        if not key:
            return None
        return CapSolverSettings(
            api_key=key,
            base_url=self._settings.CAPSOLVER_BASE_URL,
            max_cost_usd=Decimal(str(self._settings.CAPTCHA_MAX_COST_USD)),
        )

    async def _save_costs(self) -> None:
        await self._sessions.update(self._record.id, **self._cost_changes())

    def _cost_changes(self) -> dict[str, Any]:
        totals = self._ledger.totals()
        usage = {"total_input_tokens": totals.input_tokens, "total_output_tokens": totals.output_tokens}
        return {**usage, "llm_cost_usd": totals.total_usd, **self.proxy.changes()}

    # -- Engine ------------------------------------------------------------------------------------------------
    async def launch(self, browser: Awaitable[SlotEndpoints], task: str) -> None:
        """Wait for the slot's browser (the worker starts it) while the goal pre-flight runs; connect over CDP."""
        self._files.mkdir(parents=True, exist_ok=True)
        self._activity.begin("Starting the browser", ActivityKind.PREPARING)
        self._workspace = await workspace_root(self._settings, self._record)
        self._cache = ScriptCache(self._record.id, self._feed, self._workspace, workspace_limit(self._settings))
        # a cached replay calls no model (spec §27.3): no goal pre-flight when the workspace has the script
        if (plan := self._cache.plan(self._record, task)) is None or await self._cache.load(plan) is None:
            self._goal = asyncio.create_task(self._preflight(agent_task(task)), name=f"preflight-{self._record.id}")
        try:
            self._slot = await browser
            await self._certificates.accept(self._slot.cdp_ws_url, self.proxy.upstream)
            self._folders = await folders_of(self._slot, self._files)  # uploads made before this turn too
            if self._record.profile_id and self._profiles is not None:
                self._profile = await ProfileSync.start(
                    self._profiles, self._record.profile_id, self._files, self._slot.cdp_ws_url, self._profile_note
                )
            self._scripts = SessionScripts.for_slot(self._slot)
            with temp_dir_inside(self._files):
                self._browser = BrowserSession(
                    cdp_url=self._slot.cdp_url,
                    headless=False,
                    user_data_dir=str(self._files / "browser-use"),
                    downloads_path=str(self._folders.downloads),  # Chromium sees only its slot's folders
                    # browser-use would re-fetch attachments and PDFs itself and write them, as the server's uid,
                    # into that sandbox-writable folder (a planted link there would take the write anywhere), and
                    # every such download would be listed twice; Chromium's own download is the one kept (§22.2)
                    auto_download_pdfs=False,
                    cross_origin_iframes=True,
                    highlight_elements=True,
                    permissions=[],  # browser-use's default grants read "granted" where Chrome says "default"
                )
            self._runner = AgentRunner(
                RunSpec(
                    session_id=self._record.id,
                    files_dir=self._files,
                    output_schema=self._record.output_schema,
                    sensitive_data=self._record.sensitive_data,
                    system_prompt_extension=self._record.system_prompt_extension,
                    captcha=self._captcha_settings(),
                    network=self._network,
                    proxy=self.proxy.route,
                    codeview_url=self._settings.codeview_url,
                    browser_folders=self._folders,
                    file_area_mb=self._settings.SLOT_DISK_MB,
                    workspace_dir=self._workspace,
                    workspace_limit_bytes=workspace_limit(self._settings),
                ),
                self._browser,
                self._agent_llm,
                self._feed,
                self,
                activity=self._activity,
                judge_llm=self._judge_llm,
                scripts=self._scripts,
            )
        except BaseException:
            await self._cancel_goal()
            raise

    async def wait_died(self) -> ProcessDied:
        if self._slot is None:
            await asyncio.Event().wait()
        assert self._slot is not None
        return await self._slot.watch()

    async def run_turn(self, task: str) -> TurnOutcome:
        assert self._runner is not None
        # read once per turn: only a follow-up changes the ceiling or keep-alive, and none lands while a turn runs
        self._turn_record = await self._sessions.get(self._record.id)
        plan = self._cache.plan(self._turn_record, task) if self._cache is not None else None
        if plan is not None and (cached := await self._cached_turn(plan, task)) is not None:
            return cached
        task = agent_task(task)  # the values in place, the brackets removed
        preamble = None
        self._activity.begin("Setting the goal", ActivityKind.PREPARING)
        if self._turns == 0:
            preamble = await self._cold_preamble(task)
            if preamble is not None:
                preamble = await self._restore_output(preamble)
            goal_task = self._goal
            self._goal = None
            goal = await goal_task if goal_task is not None else await self._preflight(task)
            start_url = start_url_of(task)
            if start_url:
                self._runner.clipboard.seed("startUrl", start_url)
                await self._feed.append(
                    self._record.id, FeedEntry.event(EventCategory.MEMORY, "startUrl", f"startUrl: {start_url}")
                )
        else:
            goal = await self._preflight(task, follow_up_prompt(self._previous_task or "", task))
        self._turns += 1
        self._previous_task = task
        try:
            outcome = await self._runner.run_turn(task, goal=goal, preamble=preamble)
        finally:
            # one shielded call: a stop re-raised after one part must not skip the next (the secrets sweep last)
            await run_shielded(self._after_turn())
        if plan is not None and self._cache is not None:  # a successful run saves (or heals) the script
            await self._cache.save(plan, outcome, self._runner.turn_items, self._browser)
        if self._profile is not None and self._turn_record.keep_alive:
            await self._profile.checkpoint()  # a parked browser's logins are saved without waiting for release
        return outcome

    async def _cached_turn(self, plan: CachePlan, task: str) -> TurnOutcome | None:
        assert self._cache is not None  # the turn done by the cached script, or None: the agent runs it (§27.3)
        assert self._slot is not None
        try:
            cached = await self._cache.try_replay(plan, self._scripts, self._browser, self._slot.cdp_url)
        finally:
            await run_shielded(self._after_turn())  # also before a heal's agent run: each step of it is idempotent
        if cached is not None:
            self._turns, self._previous_task = self._turns + 1, task
        return cached

    async def _after_turn(self) -> None:
        """What every turn ends with, however it ended: costs saved, downloads collected, secrets swept."""
        assert self._runner is not None
        try:
            with contextlib.suppress(Exception):
                await self._save_costs()
            await self._collect_downloads()
        finally:
            await self._runner.sweep_files()

    async def _collect_downloads(self) -> None:
        async def note(text: str) -> None:
            await self._feed.append(self._record.id, FeedEntry.system("downloads", text))

        landed = await collect_downloads(self._folders, self._files, self._settings.SLOT_DISK_MB, note)
        await copy_downloads(self._workspace, landed, workspace_limit(self._settings), note)  # spec §27.2

    async def _restore_output(self, preamble: str) -> str:
        """A replayed keep-alive conversation goes on from the answer it had, as a warm follow-up would."""
        assert self._runner is not None
        coverage = self._runner.structured.restore(self._record.output)
        if coverage is None:
            return preamble
        await self._feed.append(
            self._record.id,
            FeedEntry.event(
                EventCategory.SCHEMA, "restore", f"Output store restored from the previous turn — {coverage}"
            ),
        )
        head, marker, request = preamble.rpartition("\n\nFOLLOW-UP REQUEST:")
        note = f"\n\n{RESTORED_NOTE} {coverage}"
        return f"{head}{note}{marker}{request}" if marker else preamble + note

    async def _profile_note(self, text: str) -> None:
        await self._feed.append(self._record.id, FeedEntry.system("profile", text))

    async def _preflight(self, task: str, prompt: str | None = None) -> str:
        return await goal_sentence(self._preflight_llm, task, prompt)

    async def _cold_preamble(self, task: str) -> str | None:
        """A keep-alive session whose browser was released replays its conversation into this fresh run."""
        if not self._record.keep_alive:
            return None
        messages = await self._feed.of_types(
            self._record.id, MessageType.USER_MESSAGE.value, MessageType.COMPLETION.value
        )
        preamble = replay_preamble(messages[:-1], task) if messages else None
        if preamble is None:
            return None
        previous = [m for m in messages[:-1] if m.type == MessageType.USER_MESSAGE.value]
        self._previous_task = previous[-1].summary if previous else None
        await self._feed.append(
            self._record.id,
            FeedEntry.system("keepAlive", "Conversation replayed into a fresh browser"),
        )
        return preamble

    def live_slot(self) -> SlotEndpoints | None:
        return self._slot if self._browser is not None else None

    async def salvage(self) -> Salvage:
        return await self._runner.salvage() if self._runner is not None else NOTHING_KEPT

    async def save_profile(self) -> None:
        if self._profile is not None:
            await self._profile.finish()  # shielded; a second call waits for the first, then does nothing

    async def close(self) -> None:
        self._activity.finish()
        await self._cancel_goal()
        scripts, self._scripts = self._scripts, None
        if scripts is not None:
            await scripts.aclose()  # first: a script still running must not outlive the session
        profile, self._profile = self._profile, None
        if profile is not None:
            await profile.finish()  # while CDP is still live (done already unless the run was cut short)
        browser, self._browser = self._browser, None
        if browser is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(browser.kill(), timeout=10)
        await self._certificates.aclose()
        await self._collect_downloads()  # before the slot and its directory are released
        await asyncio.to_thread(_remove_scratch, self._files)
        if self._runner is not None:
            await self._runner.sweep_files()

    async def _cancel_goal(self) -> None:
        goal, self._goal = self._goal, None
        if goal is not None and not goal.done():
            goal.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await goal


def _remove_scratch(files: Path) -> None:
    """Drop browser-use's scratch dirs (its profile copy and temp dirs); keep the agent's own files."""
    for name in ("browser-use",):
        shutil.rmtree(files / name, ignore_errors=True)
    for leftover in files.glob("browser-use-*"):
        shutil.rmtree(leftover, ignore_errors=True)
    for leftover in files.glob("browser_use_agent_*"):
        shutil.rmtree(leftover, ignore_errors=True)
