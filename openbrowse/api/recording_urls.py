"""Signed links to an owner's finished recordings (spec §22.1, §22.3), as ``recordingUrls`` / ``recordingUrl`` show.

The links point at ``GET /v3/{sessions|browsers}/{id}/files/recordings/{name}`` and carry a signature good for
15 minutes, so a client that polls (the SDK's ``wait_for_recording``) always gets fresh ones.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from openbrowse.sessions.recordings import finished_recordings

if TYPE_CHECKING:
    from starlette.requests import HTTPConnection

    from openbrowse.api.file_urls import FileUrlSigner, OwnerKind
    from openbrowse.config import Settings

__all__ = ["recording_urls"]


def recording_urls(request: HTTPConnection, kind: OwnerKind, owner_id: str) -> list[str]:
    """Full signed URLs of the owner's final recordings, oldest first (one directory listing)."""
    settings: Settings = request.app.state.settings
    signer: FileUrlSigner | None = getattr(request.app.state, "file_urls", None)
    if signer is None:
        return []
    root = settings.sessions_dir if kind == "sessions" else settings.browsers_dir
    base = str(request.base_url)
    return [signer.url(base, kind, owner_id, "recordings", item.name) for item in finished_recordings(root / owner_id)]
