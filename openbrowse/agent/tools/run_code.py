"""``run_code_file(name, code?, url?)`` (spec §11.3): save ``scripts/<name>.py`` and run it in the session's
script host, a process inside the slot's sandbox that keeps the namespace across calls (top-level ``await``,
captured ``print``, 300 s limit); omitted code re-runs the saved script; ``url`` navigates first. The server
never executes the script: it only serves the helper calls the host makes (``agent/code/script_calls.py``). The
reply carries up to 2000 characters of output and the files the script saved.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from browser_use import BrowserSession
from browser_use.agent.views import ActionResult
from pydantic import BaseModel, Field

from openbrowse.agent.code.script_calls import ScriptCalls
from openbrowse.agent.files.delivery import safe_name
from openbrowse.agent.turns.timeouts import TIMEOUTS
from openbrowse.domain.feed import EventCategory
from openbrowse.domain.redaction import REDACTORS
from openbrowse.domain.scripts import ScriptEnd, ScriptOutcome, ScriptRun

if TYPE_CHECKING:
    from browser_use import Tools

    from openbrowse.agent.tools.context import ToolContext

OUTPUT_PREVIEW = 2000
MEMORY_CHARS = 300
SCRIPTS_DIR = "scripts"
SMALLER_BATCHES = "Work in smaller batches (save progress with save_json and resume from it)."
NAMESPACE_LOST = (
    "Note: the previous script's process was killed or died, so this run started in a fresh namespace: "
    "variables and functions from earlier runs are gone."
)


class RunCodeParams(BaseModel):
    name: str = Field(description="Script name; saved as scripts/<name>.py and re-run by name.")
    code: str | None = Field(
        default=None,
        description="Python source (top-level await allowed; helpers: browser, fetch, save_json, read_json, open, "
        "pick_jsonld, remember, recall). Omit to re-run the saved script.",
    )
    url: str | None = Field(default=None, description="Navigate here before running.")


def _snapshot(files_dir: Path) -> dict[str, float]:
    if not files_dir.is_dir():
        return {}
    return {
        str(p.relative_to(files_dir)): p.stat().st_mtime
        for p in files_dir.rglob("*")
        if p.is_file() and p.relative_to(files_dir).parts[0] not in {SCRIPTS_DIR, "agent", "browser-use", "downloads"}
    }


def _script(files_dir: Path, params: RunCodeParams) -> tuple[str, Path]:
    path = files_dir / SCRIPTS_DIR / f"{safe_name(params.name.removesuffix('.py'), 60)}.py"
    if params.code and params.code.strip():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(params.code, "utf-8")
        return params.code, path
    if not path.is_file():
        raise RuntimeError(f"No saved script {path.name}; pass code to create it.")
    return path.read_text("utf-8"), path


def error_text(outcome: ScriptOutcome, limit: float) -> str | None:
    """What the agent reads about how the run ended (None when it ran to its end)."""
    if outcome.end is ScriptEnd.FINISHED:
        return None
    if outcome.end is ScriptEnd.TIMED_OUT:
        return (
            f"The script ran longer than {limit:.0f} s and was stopped; the output so far is above. {SMALLER_BATCHES}"
        )
    if outcome.end is ScriptEnd.KILLED:
        return (
            f"The script ran longer than {limit:.0f} s without giving control back, so its process was killed; "
            f"the output so far is above. Its variables are gone: the next run starts from an empty namespace. "
            f"{SMALLER_BATCHES}"
        )
    if outcome.end is ScriptEnd.CRASHED:
        return (
            f"{outcome.error or 'The script host ended unexpectedly.'} Its variables are gone: the next run starts "
            "from an empty namespace (a script that allocates without bound is killed at the sandbox's memory cap)."
        )
    return outcome.error or "the script failed"


def reply_text(path: Path, outcome: ScriptOutcome, error: str | None, saved: list[str]) -> str:
    parts = [f"{'Failed' if error else 'Ran'} {SCRIPTS_DIR}/{path.name}."]
    if outcome.namespace_lost:
        parts.append(NAMESPACE_LOST)
    output = outcome.stdout
    if output:
        clipped = output[:OUTPUT_PREVIEW]
        hidden = max(outcome.stdout_chars, len(output)) - len(clipped)
        more = f"\n[... {hidden} more chars of output]" if hidden > 0 else ""
        parts.append(f"Output:\n{clipped}{more}")
    else:
        parts.append("No output (print what you need to see).")
    if error:
        parts.append(f"Error: {error}")
    if saved:
        parts.append("Files saved: " + ", ".join(saved))
    return "\n".join(parts)


async def run_code_file(ctx: ToolContext, browser: BrowserSession, params: RunCodeParams) -> str:
    source, path = _script(ctx.files_dir, params)
    if params.url:
        await browser.navigate_to(params.url)
    await ctx.event(EventCategory.CODE, "run", f"Running {path.name}", file=f"{SCRIPTS_DIR}/{path.name}")
    before = _snapshot(ctx.files_dir)
    view = ctx.code_view
    if view is not None:
        await view.running(params.name, source)
    limit = TIMEOUTS.sandbox_script
    failed = True
    try:
        if ctx.scripts is None:
            outcome = ScriptOutcome(ScriptEnd.UNAVAILABLE, "", 0, error="Scripts cannot run in this session.")
        else:
            request = ScriptRun(
                owner=ctx.session_id,
                source=source,
                filename=f"{SCRIPTS_DIR}/{path.name}",
                target_id=browser.agent_focus_target_id,
                limit=limit,
                store=ctx.store is not None,
            )
            outcome = await ctx.scripts.run(request, ScriptCalls(ctx, browser))
            redactor = REDACTORS.of(ctx.session_id)
            outcome = replace(
                outcome,
                stdout=redactor.text(outcome.stdout),
                error=redactor.text(outcome.error) if outcome.error else outcome.error,
            )
        failed = outcome.end is not ScriptEnd.FINISHED
    finally:
        if view is not None:
            await view.finished(params.name, source, failed=failed)
    after = _snapshot(ctx.files_dir)
    saved = sorted(name for name, mtime in after.items() if before.get(name) != mtime)
    return reply_text(path, outcome, error_text(outcome, limit), saved)


def register_run_code(tools: Tools[Any], ctx: ToolContext) -> None:
    async def run_code_file_action(params: RunCodeParams, browser_session: BrowserSession) -> ActionResult:
        reply = await run_code_file(ctx, browser_session, params)
        return ActionResult(
            extracted_content=reply, long_term_memory=reply[:MEMORY_CHARS], include_extracted_content_only_once=True
        )

    run_code_file_action.__name__ = "run_code_file"
    run_code_file_action.__annotations__["browser_session"] = BrowserSession
    tools.action(
        "Save and run a reusable, parameterised Python script (scripts/<name>.py) with top-level await in a "
        "namespace that persists across calls. Helpers: browser.evaluate/html/frames/frame_text/frame_jsonld/"
        "frame_evaluate/wait_for_frame/navigate, fetch(url) (server-side), save_json/read_json/open (session "
        "files), pick_jsonld, remember/recall, read_pages, and with an output store add_item/update_item(s)/"
        "set_field/mark_absent/remove_items/read_output/coverage. Use print() to see results. Never call a "
        "site's backend API.",
        param_model=RunCodeParams,
    )(run_code_file_action)
