"""``run_code_file(name, code?, url?)`` (spec §11.3): save ``scripts/<name>.py`` and run it in the session's
persistent sandbox namespace (top-level ``await``, captured ``print``, 300 s limit); omitted code re-runs the
saved script; ``url`` navigates first. The reply carries up to 2000 characters of output and the files the
script saved.
"""

from __future__ import annotations

import ast
import asyncio
import inspect
import traceback
from pathlib import Path
from typing import TYPE_CHECKING, Any

from browser_use import BrowserSession
from browser_use.agent.views import ActionResult
from pydantic import BaseModel, Field

from openbrowse.agent.delivery import safe_name
from openbrowse.agent.sandbox import Sandbox
from openbrowse.agent.timeouts import TIMEOUTS
from openbrowse.domain.feed import EventCategory

if TYPE_CHECKING:
    from browser_use import Tools

    from openbrowse.agent.tools.context import ToolContext

OUTPUT_PREVIEW = 2000
MEMORY_CHARS = 300
SCRIPTS_DIR = "scripts"


class RunCodeParams(BaseModel):
    name: str = Field(description="Script name; saved as scripts/<name>.py and re-run by name.")
    code: str | None = Field(
        default=None,
        description="Python source (top-level await allowed; helpers: browser, fetch, save_json, read_json, open, "
        "pick_jsonld, remember, recall). Omit to re-run the saved script.",
    )
    url: str | None = Field(default=None, description="Navigate here before running.")


class AwaitAsyncioRun(ast.NodeTransformer):
    """``asyncio.run(coro)`` at top level or in an async function becomes ``await coro``: the script already runs
    inside the agent's event loop, where a nested loop cannot start."""

    def __init__(self) -> None:
        self._sync_depth = 0

    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.AST:
        self._sync_depth += 1
        self.generic_visit(node)
        self._sync_depth -= 1
        return node

    def visit_Lambda(self, node: ast.Lambda) -> ast.AST:
        self._sync_depth += 1
        self.generic_visit(node)
        self._sync_depth -= 1
        return node

    def visit_Call(self, node: ast.Call) -> ast.AST:
        self.generic_visit(node)
        func = node.func
        is_run = (
            isinstance(func, ast.Attribute)
            and func.attr == "run"
            and isinstance(func.value, ast.Name)
            and func.value.id == "asyncio"
        )
        if is_run and node.args and not self._sync_depth:
            return ast.copy_location(ast.Await(value=node.args[0]), node)
        return node


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


async def execute(sandbox: Sandbox, source: str, filename: str, limit: float) -> str | None:
    """Run ``source`` in the sandbox; return None on success, else the error text (timeouts included)."""
    try:
        tree = ast.fix_missing_locations(AwaitAsyncioRun().visit(ast.parse(source, filename)))
        code = compile(tree, filename, "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
    except SyntaxError as exc:
        return f"SyntaxError: {exc.msg} (line {exc.lineno})"
    try:
        async with asyncio.timeout(limit):
            result = eval(code, sandbox.namespace)
            if inspect.iscoroutine(result):
                await result
            while sandbox.pending:
                pending, sandbox.pending = sandbox.pending, []
                await asyncio.gather(*pending)
    except TimeoutError:
        return (
            f"The script ran longer than {limit:.0f} s and was stopped; the output so far is above. Work in smaller "
            "batches (save progress with save_json and resume from it)."
        )
    except Exception as exc:
        frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename == filename]
        where = f" (line {frames[-1].lineno}: {frames[-1].line})" if frames else ""
        return f"{type(exc).__name__}: {exc}{where}"
    finally:
        for task in sandbox.pending:
            task.cancel()
        sandbox.pending = []
    return None


async def run_code_file(ctx: ToolContext, sandbox: Sandbox, browser: BrowserSession, params: RunCodeParams) -> str:
    source, path = _script(ctx.files_dir, params)
    if params.url:
        await browser.navigate_to(params.url)
    await ctx.event(EventCategory.CODE, "run", f"Running {path.name}", file=f"{SCRIPTS_DIR}/{path.name}")
    before = _snapshot(ctx.files_dir)
    sandbox.stdout.seek(0)
    sandbox.stdout.truncate()
    view = ctx.code_view
    if view is not None:
        await view.running(params.name, source)
    error: str | None = "the script was interrupted"
    try:
        error = await execute(sandbox, source, str(path), TIMEOUTS.sandbox_script)
    finally:
        if view is not None:
            await view.finished(params.name, source, failed=error is not None)
    output = sandbox.stdout.getvalue()
    after = _snapshot(ctx.files_dir)
    saved = sorted(name for name, mtime in after.items() if before.get(name) != mtime)
    parts = [f"{'Failed' if error else 'Ran'} {SCRIPTS_DIR}/{path.name}."]
    if output:
        clipped = output[:OUTPUT_PREVIEW]
        more = f"\n[... {len(output) - OUTPUT_PREVIEW} more chars of output]" if len(output) > OUTPUT_PREVIEW else ""
        parts.append(f"Output:\n{clipped}{more}")
    else:
        parts.append("No output (print what you need to see).")
    if error:
        parts.append(f"Error: {error}")
    if saved:
        parts.append("Files saved: " + ", ".join(saved))
    return "\n".join(parts)


def register_run_code(tools: Tools[Any], ctx: ToolContext) -> None:
    sandboxes: dict[int, Sandbox] = {}

    async def run_code_file_action(params: RunCodeParams, browser_session: BrowserSession) -> ActionResult:
        sandbox = sandboxes.get(id(browser_session))
        if sandbox is None:
            sandbox = sandboxes.setdefault(
                id(browser_session), Sandbox(ctx.files_dir, browser_session, ctx.clipboard, ctx.network, ctx.store)
            )
        reply = await run_code_file(ctx, sandbox, browser_session, params)
        return ActionResult(
            extracted_content=reply, long_term_memory=reply[:MEMORY_CHARS], include_extracted_content_only_once=True
        )

    run_code_file_action.__name__ = "run_code_file"
    run_code_file_action.__annotations__["browser_session"] = BrowserSession
    tools.action(
        "Save and run a reusable, parameterised Python script (scripts/<name>.py) with top-level await in a "
        "namespace that persists across calls. Helpers: browser.evaluate/html/frames/frame_text/frame_jsonld/"
        "frame_evaluate/wait_for_frame/navigate, fetch(url) (server-side), save_json/read_json/open (session "
        "files), pick_jsonld, remember/recall, and with an output store add_item/update_item(s)/set_field/"
        "mark_absent/remove_items/read_output/coverage. Use print() to see results. Never call a site's backend API.",
        param_model=RunCodeParams,
    )(run_code_file_action)
