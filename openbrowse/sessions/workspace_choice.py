"""What a create or follow-up says about the session's workspace and cache (spec §27.2, §27.3).

``workspaceId`` must name a workspace (404 otherwise) and stays for the session's life: a follow-up may repeat it,
never change it. ``cacheScript: true`` needs a workspace to keep the script in (422 ``workspace_required``);
``null`` caches only templated tasks (``@{{…}}``) on a workspace, which the run decides; ``autoHeal`` defaults to
true.
"""

from __future__ import annotations

from typing import Any

from openbrowse.domain.sessions import SessionRecord
from openbrowse.errors import InvalidRequest, WorkspaceRequired
from openbrowse.sessions.requests import SessionCreate
from openbrowse.workspaces.service import WorkspaceService

__all__ = ["follow_up_fields", "new_session_fields"]

_FIXED = "A session keeps the workspace it was created with; start a new session to use another one."


async def new_session_fields(request: SessionCreate, workspaces: WorkspaceService | None) -> dict[str, Any]:
    """``workspace_id``, ``cache_script`` and ``auto_heal`` of a new session's record."""
    if request.workspace_id is not None:
        if workspaces is None:
            raise InvalidRequest("Workspaces are not available on this server.")
        await workspaces.get(request.workspace_id)  # WorkspaceNotFound: 404
    elif request.cache_script:
        raise WorkspaceRequired()
    return {
        "workspace_id": request.workspace_id,
        "cache_script": request.cache_script,
        "auto_heal": True if request.auto_heal is None else request.auto_heal,
    }


def follow_up_fields(record: SessionRecord, request: SessionCreate) -> dict[str, Any]:
    """The changes a follow-up makes to the cache choices (for its turn on); the workspace itself never changes."""
    if request.sent("workspace_id") and request.workspace_id not in (None, record.workspace_id):
        raise InvalidRequest(_FIXED)
    changes: dict[str, Any] = {}
    if request.sent("cache_script"):
        if request.cache_script and record.workspace_id is None:
            raise WorkspaceRequired()
        changes["cache_script"] = request.cache_script
    if request.sent("auto_heal") and request.auto_heal is not None:
        changes["auto_heal"] = request.auto_heal
    return changes
