"""The session tools of ``/v3/mcp`` (spec §23.2): BU's v3 MCP names, and the seed's names as aliases.

BU: ``run_session``, ``get_session``, ``send_task``, ``stop_session``, ``get_session_messages``, ``list_sessions``,
``list_browser_profiles``. Seed: ``create_session``, ``run_task`` (a session that closes after its task unless
``keepOpen``); ``get_session``, ``list_sessions`` and ``stop_session`` are shared. Ours: ``wait_for_session``.

Every tool answers at once (MCP clients time out long calls): starting work returns the session with its
``liveUrl``, and ``wait_for_session`` waits up to 55 s for a rest state, sending progress notifications meanwhile.
Each tool goes through the same manager and validation as the HTTP API; a refusal is raised as a tool error, which
the SDK returns as an ``isError`` result with the sentence.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import ValidationError

from openbrowse.api.profile_schemas import profile_view
from openbrowse.api.routes.sessions import to_session_create, view_of
from openbrowse.api.schemas import CreateSessionBody, message_view
from openbrowse.domain.ids import SessionId
from openbrowse.domain.sessions import StopStrategy
from openbrowse.errors import OpenBrowseError
from openbrowse.profiles.service import ProfileService
from openbrowse.sessions.manager import SessionManager

__all__ = ["REST_STATUSES", "WAIT_LIMIT_S", "register_session_tools"]

WAIT_LIMIT_S = 55.0
PROGRESS_EVERY_S = 2.0
REST_STATUSES = frozenset({"idle", "stopped", "timed_out", "error", "expired"})
Services = Callable[[], tuple[SessionManager, ProfileService]]


class ToolRefused(ToolError):
    """A tool call the service refuses: the MCP result is ``isError`` with this sentence."""


def _sentence(exc: Exception) -> str:
    if isinstance(exc, OpenBrowseError):
        return exc.message
    if isinstance(exc, ValidationError):
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first.get("loc", ())) or "arguments"
        return f"{where}: {first.get('msg', 'invalid value')}"
    return str(exc)


def _session(manager: SessionManager, record: Any) -> dict[str, Any]:
    view: dict[str, Any] = view_of(manager, record).model_dump(by_alias=True, mode="json")
    return view


def register_session_tools(server: MCPServer[Any], services: Services) -> None:
    """Add every session tool to ``server``; ``services`` gives the running app's manager and profiles."""

    async def create(body: dict[str, Any]) -> dict[str, Any]:
        manager, _ = services()
        try:
            request = to_session_create(CreateSessionBody.model_validate(body))
            return _session(manager, await manager.create(request))
        except (OpenBrowseError, ValidationError) as exc:
            raise ToolRefused(_sentence(exc)) from exc

    @server.tool(description="Create a session and run a task in it; returns at once with the session and liveUrl.")
    async def run_session(
        task: str,
        model: str | None = None,
        keep_alive: bool = False,
        output_schema: dict[str, Any] | None = None,
        profile_id: str | None = None,
        max_cost_usd: float | None = None,
    ) -> dict[str, Any]:
        body: dict[str, Any] = {"task": task, "model": model, "keepAlive": keep_alive, "outputSchema": output_schema}
        body |= {"profileId": profile_id, "maxCostUsd": max_cost_usd}
        return await create({key: value for key, value in body.items() if value is not None})

    @server.tool(description="Open a session (with a first task, or empty to send tasks later).")
    async def create_session(
        task: str | None = None, model: str | None = None, profile_id: str | None = None, keep_open: bool = True
    ) -> dict[str, Any]:
        body = {"task": task, "model": model, "profileId": profile_id, "keepAlive": keep_open}
        return await create({key: value for key, value in body.items() if value is not None})

    @server.tool(
        description="Open a session, run the goal, and close it after the task unless keepOpen; returns at once "
        "(follow with wait_for_session)."
    )
    async def run_task(
        task: str, model: str | None = None, keep_open: bool = False, output_schema: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        body = {"task": task, "model": model, "keepAlive": keep_open, "outputSchema": output_schema}
        return await create({key: value for key, value in body.items() if value is not None})

    @server.tool(description="Read one session: status, output, costs, liveUrl.")
    async def get_session(session_id: str) -> dict[str, Any]:
        manager, _ = services()
        try:
            return _session(manager, await manager.get(session_id))
        except OpenBrowseError as exc:
            raise ToolRefused(_sentence(exc)) from exc

    @server.tool(description="Send a follow-up task to an existing session.")
    async def send_task(session_id: str, task: str) -> dict[str, Any]:
        return await create({"sessionId": session_id, "task": task})

    @server.tool(description="Stop a session: strategy 'session' ends it, 'task' stops only the running task.")
    async def stop_session(session_id: str, strategy: str = "session") -> dict[str, Any]:
        manager, _ = services()
        try:
            record = await manager.stop(SessionId(session_id), StopStrategy(strategy))
        except ValueError as exc:
            raise ToolRefused("strategy must be 'session' or 'task'") from exc
        except OpenBrowseError as exc:
            raise ToolRefused(_sentence(exc)) from exc
        return _session(manager, record)

    @server.tool(description="A session's messages (its feed), oldest first, after a cursor.")
    async def get_session_messages(session_id: str, after: str | None = None, limit: int = 100) -> dict[str, Any]:
        manager, _ = services()
        try:
            messages, has_more = await manager.messages(session_id, after=after, before=None, limit=max(1, limit))
        except OpenBrowseError as exc:
            raise ToolRefused(_sentence(exc)) from exc
        rows = [message_view(m).model_dump(by_alias=True, mode="json") for m in messages]
        return {"messages": rows, "hasMore": has_more}

    @server.tool(description="List sessions, newest first.")
    async def list_sessions(page: int = 1, page_size: int = 20) -> dict[str, Any]:
        manager, _ = services()
        page, page_size = max(1, page), min(max(1, page_size), 100)
        records, total = await manager.page(page, page_size)
        sessions = [_session(manager, record) for record in records]
        return {"sessions": sessions, "total": total, "page": page, "pageSize": page_size}

    @server.tool(description="List the browser profiles sessions can start from.")
    async def list_browser_profiles(page: int = 1, page_size: int = 20, query: str | None = None) -> dict[str, Any]:
        _, profiles = services()
        page, page_size = max(1, page), min(max(1, page_size), 100)
        records, total = await profiles.page(page, page_size, query or None)
        rows = [profile_view(record).model_dump(by_alias=True, mode="json") for record in records]
        return {"profiles": rows, "total": total, "page": page, "pageSize": page_size}

    @server.tool(
        description="Wait up to timeoutSeconds (at most 55) for a session to come to rest (idle, stopped, "
        "timed_out, error); sends progress notifications; returns the session either way."
    )
    async def wait_for_session(session_id: str, ctx: Context, timeout_seconds: float = WAIT_LIMIT_S) -> dict[str, Any]:
        manager, _ = services()
        limit = min(max(timeout_seconds, 0.0), WAIT_LIMIT_S)
        loop = asyncio.get_running_loop()
        deadline, next_progress = loop.time() + limit, loop.time()
        try:
            while True:
                record = await manager.get(session_id)
                if (str(record.status) in REST_STATUSES and not record.is_queued) or loop.time() >= deadline:
                    return _session(manager, record)
                if loop.time() >= next_progress:
                    waited = limit - (deadline - loop.time())
                    await ctx.report_progress(waited, limit, f"{record.status}: {record.last_step_summary or ''}")
                    next_progress = loop.time() + PROGRESS_EVERY_S
                await asyncio.sleep(0.25)
        except OpenBrowseError as exc:
            raise ToolRefused(_sentence(exc)) from exc
