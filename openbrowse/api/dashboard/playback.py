"""An ended session's recordings on its dashboard page, where the live view was (spec §22.1).

Each recording (one per turn) is a ``<video>`` of its signed file URL, with the feed's steps of that turn as chapter
marks: links that seek the video (``static/recordings.js``). A step's mark is where the step began, the time of its
feed entry less its ``durationSeconds``, counted from the recorder's start (in the file's name). Server-rendered;
the page loads nothing from elsewhere.
"""

from __future__ import annotations

import html
import json
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from openbrowse.api.dashboard.pages import STATIC
from openbrowse.domain.feed import MessageType

if TYPE_CHECKING:
    from collections.abc import Sequence

    from openbrowse.domain.feed import Message
    from openbrowse.sessions.recordings import RecordingFile

__all__ = ["Chapter", "Playback", "chapters_of", "playback_html"]

STEP_TYPES = frozenset(
    {MessageType.BROWSER_ACTION.value, MessageType.RESULT.value, MessageType.BROWSER_ACTION_ERROR.value}
)
MARK_TYPES = STEP_TYPES | {MessageType.USER_MESSAGE.value, MessageType.COMPLETION.value}
LABEL_LIMIT = 90


@dataclass(frozen=True, slots=True)
class Chapter:
    seconds: float
    label: str


@dataclass(frozen=True, slots=True)
class Playback:
    """One recording as the page shows it: where to fetch it and where its steps are."""

    url: str
    recording: RecordingFile
    chapters: list[Chapter]


def _step_of(message: Message) -> tuple[int | None, float]:
    """The step number and duration a step entry carries in its data (JSON), if any."""
    try:
        data = json.loads(message.data) if message.data else {}
    except ValueError:
        return None, 0.0
    if not isinstance(data, dict):
        return None, 0.0
    step = data.get("step")
    duration = data.get("durationSeconds")
    return (step if isinstance(step, int) else None), (float(duration) if isinstance(duration, int | float) else 0.0)


def _label(message: Message, step: int | None) -> str:
    summary = " ".join(message.summary.split())
    if len(summary) > LABEL_LIMIT:
        summary = summary[: LABEL_LIMIT - 1] + "…"
    if message.type == MessageType.USER_MESSAGE.value:
        return f"Task: {summary}"
    if message.type == MessageType.COMPLETION.value:
        return f"Done: {summary}"
    return f"Step {step}: {summary}" if step is not None else summary


def chapters_of(recording: RecordingFile, ends_ms: int | None, messages: Sequence[Message]) -> list[Chapter]:
    """The marks of the feed entries inside one recording (from its start to ``ends_ms``, the next recording's
    start, or open-ended), in order; the task that started the turn (sent before the recorder) marks 0:00."""
    start = recording.started_ms / 1000
    end = ends_ms / 1000 if ends_ms is not None else float("inf")
    task: Chapter | None = None
    found: list[Chapter] = []
    for message in messages:
        if message.type not in MARK_TYPES:
            continue
        written = message.created_at.timestamp()
        if written >= end:
            break
        step, duration = _step_of(message)
        if written < start:
            if message.type == MessageType.USER_MESSAGE.value:
                task = Chapter(0.0, _label(message, step))
            continue
        if message.type == MessageType.USER_MESSAGE.value:
            continue  # a follow-up sent while parked: it starts the next turn, whose recording marks it
        began = written - duration if message.type in STEP_TYPES else written
        found.append(Chapter(round(max(began - start, 0.0), 1), _label(message, step)))
    return [task, *found] if task is not None else found


def _clock(seconds: float) -> str:
    whole = int(seconds)
    return f"{whole // 60}:{whole % 60:02d}"


def _figure(index: int, item: Playback) -> str:
    e = html.escape
    started = datetime.fromtimestamp(item.recording.started_ms / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    caption = f"Turn {item.recording.turn}" if item.recording.turn is not None else "Recording"
    video_id = f"recording-{index}"
    marks = "".join(
        f'<li><a href="#{video_id}" data-video="{video_id}" data-seek="{chapter.seconds}">'
        f"<time>{_clock(chapter.seconds)}</time> {e(chapter.label)}</a></li>"
        for chapter in item.chapters
    )
    chapters = f'<ol class="chapters" aria-label="Steps of {e(caption)}">{marks}</ol>' if marks else ""
    return (
        f'<figure class="recording"><figcaption>{e(caption)} · {e(started)} · '
        f'<a href="{e(item.url)}" download="{e(item.recording.name)}">download</a></figcaption>'
        f'<video id="{video_id}" controls preload="metadata" playsinline src="{e(item.url)}"></video>'
        f"{chapters}</figure>"
    )


def playback_html(items: Sequence[Playback]) -> str:
    """The recordings block for the live-view box (empty when there is nothing to play)."""
    if not items:
        return ""
    figures = "".join(_figure(index, item) for index, item in enumerate(items, start=1))
    return (
        f'<div id="recordings" class="recordings"><h3>Recordings</h3>{figures}</div>'
        f'<script type="module" src="{STATIC}/recordings.js"></script>'
    )
