"""Recordings of a slot's display in an owner's file area (spec §22.1): one file per session turn, one per raw browser.

A recording is written straight into the owner's ``recordings/`` under a partial name (``….mp4.part``) while
ffmpeg runs, and renamed to its final name once the recorder has stopped, so anything that lists final names
(``recordingUrls``, SDK ``wait_for_recording``, the dashboard) only ever sees finished files. A recorder that died
mid-run (killed, or its display gone) still leaves a playable fragmented MP4, which is finalised the same way.

A recording counts towards its owner's file area cap (``SLOT_DISK_MB``, spec §24.5): ffmpeg may write no more than
the room left when it starts (:class:`~openbrowse.slots.recorder.ScreenRecorder` ``max_bytes``); a full area means no
recording, and a recording cut at the cap is kept up to there; the owner is told either way.

The final name carries what the dashboard needs to line the feed up with the video: ``turn-<n>-<ms>.mp4`` for
session turns and ``browser-<ms>.mp4`` for raw browsers, ``<ms>`` being the time of the video's first frame (ms since
the epoch; the partial file carries the spawn's).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import re
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from openbrowse.agent.files.quota import MIB, AreaQuota
from openbrowse.domain.feed import FeedEntry
from openbrowse.shielding import run_shielded
from openbrowse.slots.recorder import ScreenRecorder, find_ffmpeg
from openbrowse.slots.slot import Slot
from openbrowse.slots.slot_files import child_environment

if TYPE_CHECKING:
    from openbrowse.config import Settings
    from openbrowse.domain.ids import SessionId
    from openbrowse.sessions.runtime import FeedLog

__all__ = [
    "PARTIAL_SUFFIX",
    "RECORDINGS",
    "DisplayRecording",
    "RecordingFile",
    "browser_recording",
    "finalize_all_leftovers",
    "finalize_leftovers",
    "finished_recordings",
    "session_recording",
]

logger = logging.getLogger(__name__)

RECORDINGS = "recordings"
PARTIAL_SUFFIX = ".part"
MIN_ROOM = 1 * MIB
"""Below this much room in the file area a recording is not started (it would end at once)."""
_FINAL = re.compile(r"^(?:turn-(?P<turn>\d{1,6})|browser)-(?P<ms>\d{10,16})\.mp4$", re.ASCII)

Note = Callable[[str], Awaitable[None]]
"""Tells the owner's feed (sessions) or log (raw browsers) one sentence about a recording."""


@dataclass(frozen=True, slots=True)
class RecordingFile:
    name: str
    started_ms: int
    turn: int | None


def _parse(name: str) -> RecordingFile | None:
    match = _FINAL.match(name)
    if match is None:
        return None
    turn = match.group("turn")
    return RecordingFile(name, int(match.group("ms")), int(turn) if turn is not None else None)


def finished_recordings(files_dir: Path) -> list[RecordingFile]:
    """The final recordings in ``files_dir/recordings``, oldest first (blocking; a missing folder is none)."""
    try:
        entries = list(os.scandir(files_dir / RECORDINGS))
    except OSError:
        return []
    found = [
        parsed
        for entry in entries
        if entry.is_file(follow_symlinks=False) and (parsed := _parse(entry.name)) is not None
    ]
    return sorted(found, key=lambda item: (item.started_ms, item.name))


def _finalize(partial: Path, started_at: float | None = None) -> Path | None:
    """Give a partial recording its final name, stamped ``started_at`` when given (the time of its first frame);
    an empty one (ffmpeg never wrote a frame) is removed."""
    final = partial.with_name(partial.name.removesuffix(PARTIAL_SUFFIX))
    if started_at is not None:
        prefix = final.name.removesuffix(".mp4").rsplit("-", 1)[0]
        final = final.with_name(f"{prefix}-{int(started_at * 1000)}.mp4")
    try:
        if partial.lstat().st_size == 0:
            partial.unlink()
            return None
        partial.rename(final)
    except OSError:
        logger.warning("Could not finalise the recording %s", partial, exc_info=True)
        return None
    return final


def _size(path: Path) -> int:
    try:
        return path.lstat().st_size
    except OSError:
        return 0


def finalize_leftovers(files_dir: Path) -> list[Path]:
    """Finalise partial recordings a previous server process left behind (it died before renaming them)."""
    folder = files_dir / RECORDINGS
    with contextlib.suppress(OSError):
        return [final for path in folder.glob(f"*{PARTIAL_SUFFIX}") if (final := _finalize(path)) is not None]
    return []


def finalize_all_leftovers(root: Path) -> int:
    """:func:`finalize_leftovers` for every owner under ``root`` (start-up, before any recorder runs)."""
    owners = {path.parent.parent for path in root.glob(f"*/{RECORDINGS}/*{PARTIAL_SUFFIX}")}
    return sum(len(finalize_leftovers(owner)) for owner in owners)


async def browser_recording(settings: Settings, files_dir: Path, slot: object) -> DisplayRecording | None:
    """Start recording a raw browser's slot until it stops; None when it cannot (the reason is logged)."""
    if not isinstance(slot, Slot):  # a stand-in slot of a test has no display to record
        return None

    async def note(text: str) -> None:
        logger.warning("Raw browser %s: %s", files_dir.name, text)

    recording = DisplayRecording(settings, files_dir, note, per_turn=False)
    return recording if await recording.begin(slot) else None


def session_recording(settings: Settings, session_id: SessionId, feed: FeedLog) -> DisplayRecording:
    """A session's per-turn recordings; what goes wrong is told in its feed as a ``system``/``recording`` event."""

    async def note(text: str) -> None:
        await feed.append(session_id, FeedEntry.system("recording", text))

    return DisplayRecording(settings, settings.sessions_dir / session_id, note, per_turn=True)


class DisplayRecording:
    """One owner's recordings: :meth:`begin` starts recording a running slot, :meth:`finish` stops and finalises.

    Owned by the session's worker (or the raw browser's task); :meth:`finish` is shielded and idempotent, so every
    end path (turn end, stop, crash, maintenance) can call it before the slot is released.
    """

    def __init__(self, settings: Settings, files_dir: Path, note: Note, *, per_turn: bool) -> None:
        """``per_turn``: files are numbered ``turn-<n>`` (sessions); else one ``browser-`` file (raw browsers)."""
        self._settings = settings
        self._files_dir = files_dir
        self._note = note
        self._per_turn = per_turn
        self._recorder: ScreenRecorder | None = None
        self._told_missing = False

    @property
    def recording(self) -> bool:
        return self._recorder is not None

    @property
    def recorder(self) -> ScreenRecorder | None:
        """The running recording, if any (tests and the benchmark read its pid)."""
        return self._recorder

    async def begin(self, slot: Slot) -> bool:
        """Start recording ``slot``'s display; False (with a note the first time) when there is no ffmpeg."""
        if self._recorder is not None:
            return True
        ffmpeg = await asyncio.to_thread(find_ffmpeg, self._settings.RECORDING_FFMPEG)
        if ffmpeg is None:
            if not self._told_missing:
                self._told_missing = True
                await self._note(
                    f"No recording: ffmpeg ({self._settings.RECORDING_FFMPEG or 'RECORDING_FFMPEG unset'}) is not "
                    "installed on this server, so the run goes on without one"
                )
            return False
        stamp = int(time.time() * 1000)
        prefix = "browser"
        if self._per_turn:
            done = await asyncio.to_thread(finished_recordings, self._files_dir)
            prefix = f"turn-{sum(1 for item in done if item.turn is not None) + 1}"
        output = self._files_dir / RECORDINGS / f"{prefix}-{stamp}.mp4{PARTIAL_SUFFIX}"
        quota = AreaQuota.of(self._files_dir, self._settings.SLOT_DISK_MB)
        room = await asyncio.to_thread(quota.room)
        if room < MIN_ROOM:
            await self._note(f"No recording: the file area is full (capped at {quota.limit_mb} MiB)")
            return False
        recorder = ScreenRecorder(
            f"recorder-{self._files_dir.name}",
            ffmpeg=ffmpeg,
            display=slot.display,
            fps=self._settings.RECORDING_FPS,
            output=output,
            wrap=slot.confinement.command,
            env=slot.confinement.environment(child_environment(slot.tag)),
            max_bytes=room,
        )
        try:
            await asyncio.to_thread(output.parent.mkdir, parents=True, exist_ok=True)
            recorder.start()
        except Exception as exc:
            logger.warning("Recording of %s could not start: %s", self._files_dir.name, exc)
            await self._note(f"No recording: the recorder could not start ({exc})")
            return False
        self._recorder = recorder
        return True

    async def finish(self) -> Path | None:
        """Stop the recorder (if any) and give its file the final name; return that path."""
        recorder, self._recorder = self._recorder, None
        if recorder is None:
            return None
        return await run_shielded(self._stop(recorder))

    async def _stop(self, recorder: ScreenRecorder) -> Path | None:
        code = await recorder.stop()
        process = recorder.process
        written = await asyncio.to_thread(_size, recorder.output)
        final = await asyncio.to_thread(_finalize, recorder.output, recorder.first_output_at)
        if final is not None and recorder.max_bytes is not None and written >= recorder.max_bytes:
            await self._note(
                f"The recording stopped at {written / MIB:.1f} MiB: the file area is full "
                f"(capped at {self._settings.SLOT_DISK_MB} MiB); what was recorded up to there is kept"
            )
        if final is None:
            tail = process.output_tail(300).strip() if process is not None else ""
            await self._note(
                f"No recording of this run: the recorder failed (exit {code}){': ' + tail if tail else ''}"
            )
        else:
            logger.info("Recording saved: %s", final)
        return final
