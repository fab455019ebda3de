"""The agent's own tools (spec §11), one per module; :func:`register_tools` is the only place they are wired."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from openbrowse.agent.guard import Guard, install_guard
from openbrowse.agent.tools.clipboard import register_clipboard
from openbrowse.agent.tools.context import ToolContext
from openbrowse.agent.tools.external_read import install_confined_read
from openbrowse.agent.tools.find_links import register_find_links
from openbrowse.agent.tools.http_fetch import register_http_fetch
from openbrowse.agent.tools.read_pages import register_read_pages
from openbrowse.agent.tools.run_code import register_run_code
from openbrowse.agent.tools.solve_captcha import register_solve_captcha
from openbrowse.agent.tools.tab_fanout import register_tab_fanout
from openbrowse.agent.tools.upload_file import install_confined_upload
from openbrowse.agent.tools.wait_for_human import register_wait_for_human
from openbrowse.agent.tools.workspace_files import install_workspace_files

if TYPE_CHECKING:
    from browser_use import Tools

__all__ = ["ToolContext", "register_tools"]


def register_tools(
    tools: Tools[Any], ctx: ToolContext, *, before_guard: Sequence[Callable[[Tools[Any]], None]] = ()
) -> Guard:
    """Register every added tool on ``tools``, then install the guard layer last so it wraps them all.

    ``before_guard`` registers what the caller owns (the answer store's actions and its gated ``done``) before
    the guard, so the guard wraps those too.
    """
    install_confined_upload(tools, ctx)
    install_confined_read(tools, ctx)
    install_workspace_files(tools, ctx)
    register_clipboard(tools, ctx.clipboard)
    register_http_fetch(tools, ctx)
    register_find_links(tools, ctx)
    register_read_pages(tools, ctx)
    register_tab_fanout(tools, ctx)
    register_run_code(tools, ctx)
    if ctx.captcha is not None:
        register_solve_captcha(tools, ctx, ctx.captcha)
    if ctx.ask_for_human is not None:
        register_wait_for_human(tools, ctx.ask_for_human)
    for register in before_guard:
        register(tools)
    return install_guard(tools, ctx.files_dir)
