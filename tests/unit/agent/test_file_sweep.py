"""The session's files are swept of secrets, except the recordings the recorder is still appending to."""

from __future__ import annotations

from pathlib import Path

from openbrowse.agent.files.sweep import FileSweep
from openbrowse.domain.redaction import Redactor

SECRET = "hunter2-very-secret"


def _area(root: Path) -> None:
    (root / "downloads").mkdir(parents=True)
    (root / "recordings").mkdir()
    (root / "downloads" / "page.txt").write_text(f"password: {SECRET}\n")
    (root / "notes.md").write_text(f"{SECRET}\n")
    (root / "recordings" / "turn-1.mp4.part").write_bytes(b"\x00\x00\x00\x18ftyp" + SECRET.encode())


def test_a_sweep_hides_secrets_in_every_file_but_the_recordings(tmp_path: Path) -> None:
    _area(tmp_path)
    rewritten = FileSweep(tmp_path).sweep(Redactor({SECRET: "password"}))
    assert sorted(Path(path).name for path in rewritten) == ["notes.md", "page.txt"]
    assert SECRET not in (tmp_path / "downloads" / "page.txt").read_text()
    assert SECRET not in (tmp_path / "notes.md").read_text()
    assert (tmp_path / "recordings" / "turn-1.mp4.part").read_bytes().endswith(SECRET.encode())


def test_a_folder_named_recordings_deeper_down_is_swept(tmp_path: Path) -> None:
    nested = tmp_path / "downloads" / "recordings"
    nested.mkdir(parents=True)
    (nested / "leak.txt").write_text(SECRET)
    FileSweep(tmp_path).sweep(Redactor({SECRET: "password"}))
    assert SECRET not in (nested / "leak.txt").read_text()
