"""File-area operations never follow a link, and keep nothing of a failed write (spec §22.3, §24.6)."""

from __future__ import annotations

import os
from pathlib import Path

from openbrowse.sessions.area_files import PendingFile, copy_into, list_folder, open_in, share_folder


def test_listing_shows_finished_regular_files_only(tmp_path: Path) -> None:
    folder = tmp_path / "downloads"
    folder.mkdir()
    (folder / "report.txt").write_text("numbers")
    (folder / "big.iso").write_text("")  # Chromium reserves the name while it writes the .crdownload
    (folder / "big.iso.crdownload").write_text("half")
    (folder / ".hidden").write_text("x")
    (folder / "sub").mkdir()
    secret = tmp_path / "secret.env"
    secret.write_text("KEY=1")
    (folder / "link.txt").symlink_to(secret)
    assert [(entry.name, entry.size) for entry in list_folder(folder)] == [("report.txt", 7)]
    assert list_folder(tmp_path / "missing") == []


def test_open_refuses_links_folders_and_a_linked_folder(tmp_path: Path) -> None:
    secret = tmp_path / "secret.env"
    secret.write_text("KEY=1")
    folder = tmp_path / "uploads"
    folder.mkdir()
    (folder / "link.txt").symlink_to(secret)
    (folder / "sub").mkdir()
    assert open_in(folder, "link.txt") is None
    assert open_in(folder, "sub") is None
    assert open_in(folder, "../secret.env") is None
    swapped = tmp_path / "swapped"
    swapped.symlink_to(tmp_path)  # a folder replaced by a link to somewhere else
    assert open_in(swapped, "secret.env") is None
    (folder / "own.txt").write_text("mine")
    opened = open_in(folder, "own.txt")
    assert opened is not None
    try:
        assert Path(opened.proc_path).read_text() == "mine"
        assert opened.status.st_size == 4
    finally:
        opened.close()


def test_copy_replaces_a_planted_link_not_its_target(tmp_path: Path) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("untouched")
    source = tmp_path / "source.txt"
    source.write_text("uploaded bytes")
    slot_uploads = tmp_path / "slot" / "uploads"
    slot_uploads.mkdir(parents=True)
    (slot_uploads / "cv.txt").symlink_to(victim)
    fd = os.open(source, os.O_RDONLY)
    try:
        copy_into(fd, slot_uploads, "cv.txt")
    finally:
        os.close(fd)
    assert victim.read_text() == "untouched"
    assert not (slot_uploads / "cv.txt").is_symlink()
    assert (slot_uploads / "cv.txt").read_text() == "uploaded bytes"
    assert oct((slot_uploads / "cv.txt").stat().st_mode & 0o777) == oct(0o644)


def test_share_folder_copies_every_upload(tmp_path: Path) -> None:
    area = tmp_path / "area" / "uploads"
    area.mkdir(parents=True)
    (area / "a.txt").write_text("A")
    (area / "b.txt").write_text("B")
    assert share_folder(area, tmp_path / "slot" / "uploads") == 2
    assert sorted(path.name for path in (tmp_path / "slot" / "uploads").iterdir()) == ["a.txt", "b.txt"]


def test_a_pending_file_lands_whole_or_not_at_all(tmp_path: Path) -> None:
    folder = tmp_path / "uploads"
    pending = PendingFile(folder)
    pending.write(b"abc")
    pending.write(b"def")
    entry = pending.commit("data.bin")
    assert (entry.name, entry.size) == ("data.bin", 6)
    assert (folder / "data.bin").read_bytes() == b"abcdef"
    aborted = PendingFile(folder)
    aborted.write(b"partial")
    aborted.abort()
    assert sorted(path.name for path in folder.iterdir()) == ["data.bin"]


def test_a_recording_still_being_written_is_neither_listed_nor_served(tmp_path: Path) -> None:
    folder = tmp_path / "recordings"
    folder.mkdir()
    (folder / "turn-1-100.mp4").write_bytes(b"done")
    (folder / "turn-2-200.mp4.part").write_bytes(b"growing")
    assert [entry.name for entry in list_folder(folder)] == ["turn-1-100.mp4"]
    assert open_in(folder, "turn-2-200.mp4.part") is None
    opened = open_in(folder, "turn-1-100.mp4")
    assert opened is not None
    opened.close()
