"""Pure parts of recordings (spec §22.1): final names, listing order, finalising partial files, chapter marks."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

from openbrowse.api.dashboard.playback import Playback, chapters_of, playback_html
from openbrowse.domain.feed import Message
from openbrowse.domain.ids import MessageId, SessionId
from openbrowse.sessions.recordings import (
    RECORDINGS,
    RecordingFile,
    _finalize,
    finalize_all_leftovers,
    finalize_leftovers,
    finished_recordings,
)
from openbrowse.slots.recorder import recorder_argv

START_MS = 1_765_000_000_000


def _message(seq: int, kind: str, summary: str, at_ms: int, **data: object) -> Message:
    return Message(
        id=MessageId(f"m{seq}"),
        session_id=SessionId("s"),
        seq=seq,
        role="assistant",
        type=kind,
        summary=summary,
        data=json.dumps(data),
        hidden=False,
        created_at=datetime.fromtimestamp(at_ms / 1000, UTC),
    )


def test_only_final_recordings_are_listed_oldest_first(tmp_path: Path) -> None:
    folder = tmp_path / RECORDINGS
    folder.mkdir()
    for name in ("turn-2-1765000000900.mp4", "turn-1-1765000000100.mp4", "turn-3-1765000009000.mp4.part",
                 "notes.txt", "turn-x-1765000000100.mp4", "browser-1765000000500.mp4"):  # fmt: skip
        (folder / name).write_bytes(b"x")
    (folder / "turn-9-1765000000001.mp4").symlink_to(folder / "notes.txt")  # never a link
    assert finished_recordings(tmp_path) == [
        RecordingFile("turn-1-1765000000100.mp4", 1765000000100, 1),
        RecordingFile("browser-1765000000500.mp4", 1765000000500, None),
        RecordingFile("turn-2-1765000000900.mp4", 1765000000900, 2),
    ]
    assert finished_recordings(tmp_path / "missing") == []


def test_leftover_partial_files_are_finalised_and_empty_ones_dropped(tmp_path: Path) -> None:
    folder = tmp_path / RECORDINGS
    folder.mkdir()
    (folder / "turn-1-1765000000100.mp4.part").write_bytes(b"data")
    (folder / "turn-2-1765000000200.mp4.part").write_bytes(b"")
    assert finalize_leftovers(tmp_path) == [folder / "turn-1-1765000000100.mp4"]
    assert sorted(p.name for p in folder.iterdir()) == ["turn-1-1765000000100.mp4"]


def test_the_recorder_writes_a_fragmented_mp4_to_its_descriptor() -> None:
    argv = recorder_argv("/usr/bin/ffmpeg", ":12", 3, 7)
    assert argv[-1] == "pipe:7" and argv[argv.index("-i") + 1] == ":12"
    assert "empty_moov" in argv[argv.index("-movflags") + 1] and argv[argv.index("-g") + 1] == "6"


def test_chapters_start_at_each_steps_beginning_within_its_own_recording() -> None:
    first = RecordingFile(f"turn-1-{START_MS}.mp4", START_MS, 1)
    second_start = START_MS + 60_000
    feed = [
        _message(1, "user_message", "Find the price", START_MS - 5_000),
        _message(2, "planning", "Session started", START_MS - 100),
        _message(3, "browser_action", "Open the page", START_MS + 4_000, step=1, durationSeconds=3.5),
        _message(4, "completion", "It is 12 EUR", START_MS + 9_000),
        _message(5, "user_message", "And the shipping?", second_start - 1_000),
        _message(6, "browser_action", "Read shipping", second_start + 5_000, step=2, durationSeconds=2.0),
    ]
    marks = [(c.seconds, c.label) for c in chapters_of(first, second_start, feed)]
    assert marks == [(0.0, "Task: Find the price"), (0.5, "Step 1: Open the page"), (9.0, "Done: It is 12 EUR")]
    second = RecordingFile(f"turn-2-{second_start}.mp4", second_start, 2)
    marks = [(c.seconds, c.label) for c in chapters_of(second, None, feed)]
    assert marks == [(0.0, "Task: And the shipping?"), (3.0, "Step 2: Read shipping")]


def test_the_playback_block_escapes_what_the_feed_says() -> None:
    item = RecordingFile(f"turn-1-{START_MS}.mp4", START_MS, 1)
    feed = [_message(1, "browser_action", "<script>x</script>", START_MS + 2_000, step=1, durationSeconds=1.0)]
    block = playback_html(
        [Playback("/v3/sessions/s/files/recordings/a.mp4?expires=1&sig=a", item, chapters_of(item, None, feed))]
    )
    assert "<script>x" not in block and "&lt;script&gt;" in block
    assert 'data-seek="1.0"' in block and "expires=1&amp;sig=a" in block
    assert playback_html([]) == ""


def test_a_finished_recording_is_named_after_its_first_frame(tmp_path: Path) -> None:
    folder = tmp_path / RECORDINGS
    folder.mkdir()
    partial = folder / "turn-2-1765000000100.mp4.part"
    partial.write_bytes(b"data")
    assert _finalize(partial, 1765000000.9) == folder / "turn-2-1765000000900.mp4"
    assert [item.turn for item in finished_recordings(tmp_path)] == [2]


def test_start_up_finalises_what_every_owner_left_partial(tmp_path: Path) -> None:
    for owner in ("a", "b"):
        (tmp_path / owner / RECORDINGS).mkdir(parents=True)
        (tmp_path / owner / RECORDINGS / "browser-1765000000100.mp4.part").write_bytes(b"data")
    assert finalize_all_leftovers(tmp_path) == 2
    assert [item.name for item in finished_recordings(tmp_path / "b")] == ["browser-1765000000100.mp4"]
