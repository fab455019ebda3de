"""The settings of the files sessions and raw browsers leave behind: recordings, retention, workspaces (spec §22,
§27), a base of :class:`Settings`."""

from __future__ import annotations

from pydantic import Field
from pydantic_settings import BaseSettings


class FileSettings(BaseSettings):
    RECORDING_DEFAULT: bool = False
    """Record every session's and raw browser's display, as if each request sent ``enableRecording: true``."""
    RECORDING_FPS: int = Field(default=3, ge=1, le=30)
    """Frames per second of a recording (spec §22.1): a few are enough to follow a run, and cost little CPU."""
    RECORDING_FFMPEG: str = "ffmpeg"
    """The ffmpeg that records (a name on PATH or a path); when it is missing, runs go on without a recording."""
    ARTIFACT_RETENTION_HOURS: float = Field(default=168, ge=0)
    """Hours an ended raw browser's files (downloads, uploads, recordings, screenshots) are kept (spec §22.3)."""
    WORKSPACE_MAX_MB: int = Field(default=1024, ge=1)
    """Most bytes one workspace's files may hold, in MiB (spec §27.1); a single file is at most 100 MiB."""
