"""Files crossing the sandbox line (spec §24.6): uploads staged from the session's area only, downloads moved
out without following links, browser-use's file actions kept inside the session's folder."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from browser_use.filesystem.file_system import FileSystem

from openbrowse.agent.files.confined import FileRefused, OverQuota, move_files, open_confined
from openbrowse.agent.files.quota import AreaQuota
from openbrowse.agent.tools.external_read import _private_copy
from openbrowse.agent.tools.upload_file import stage_upload
from openbrowse.domain.browser_folders import BrowserFolders


@pytest.fixture
def files_dir(tmp_path: Path) -> Path:
    path = tmp_path / "data" / "sessions" / "s1"
    path.mkdir(parents=True)
    return path


@pytest.fixture
def folders(tmp_path: Path) -> BrowserFolders:
    return BrowserFolders(
        uploads=tmp_path / "run" / "slot-0" / "uploads", downloads=tmp_path / "run" / "slot-0" / "downloads"
    ).ensure()


@pytest.fixture
def secret(tmp_path: Path) -> Path:
    path = tmp_path / ".env"
    path.write_text("OPENAI_API_KEY=sk-secret\n")
    return path


# -- upload_file ----------------------------------------------------------------------------------------------
def test_a_managed_name_is_copied_into_the_slots_uploads(files_dir: Path, folders: BrowserFolders) -> None:
    (files_dir / "report.csv").write_text("a,b\n1,2\n")
    staged = stage_upload("report.csv", files_dir, folders)
    assert staged.parent.parent == folders.uploads and staged.name == "report.csv"
    assert staged.read_text() == "a,b\n1,2\n"
    assert staged.stat().st_mode & 0o777 == 0o644
    again = stage_upload(str(files_dir / "report.csv"), files_dir, folders)  # the absolute real path works too
    assert again != staged and again.read_text() == staged.read_text()


def test_files_in_uploads_downloads_and_the_file_system_folder_are_found(
    files_dir: Path, folders: BrowserFolders
) -> None:
    (files_dir / "uploads").mkdir()
    (files_dir / "uploads" / "cv.pdf").write_bytes(b"%PDF-1")
    (folders.downloads / "fresh.txt").write_text("just downloaded")
    fs_dir = files_dir / "agent" / "browseruse_agent_data"
    fs_dir.mkdir(parents=True)
    (fs_dir / "notes.md").write_text("# notes")
    assert stage_upload("cv.pdf", files_dir, folders).read_bytes() == b"%PDF-1"
    assert stage_upload("fresh.txt", files_dir, folders).read_text() == "just downloaded"
    assert stage_upload(str(folders.downloads / "fresh.txt"), files_dir, folders).read_text() == "just downloaded"
    assert stage_upload("notes.md", files_dir, folders, fs_dir).read_text() == "# notes"


def test_a_download_moved_at_the_end_of_a_turn_is_still_found_by_its_old_path(
    files_dir: Path, folders: BrowserFolders
) -> None:
    (folders.downloads / "invoice.pdf").write_bytes(b"%PDF-2")
    old_path = str(folders.downloads / "invoice.pdf")
    move_files(folders.downloads, files_dir / "downloads")
    assert stage_upload(old_path, files_dir, folders).read_bytes() == b"%PDF-2"


@pytest.mark.parametrize("attack", ["absolute", "dotdot", "link", "private", "missing", "directory"])
def test_anything_outside_the_session_is_refused(
    files_dir: Path, folders: BrowserFolders, secret: Path, attack: str
) -> None:
    (files_dir / "link.txt").symlink_to(secret)
    (files_dir / "profile_base.json").write_text('{"cookies": []}')
    (files_dir / "folder").mkdir()
    path = {
        "absolute": str(secret),
        "dotdot": "../../../.env",
        "link": "link.txt",
        "private": "profile_base.json",
        "missing": "nothing.txt",
        "directory": "folder",
    }[attack]
    with pytest.raises(FileRefused):
        stage_upload(path, files_dir, folders)
    assert not any(folders.uploads.rglob("*.*")), "nothing may reach the browser's folder"


def test_a_link_planted_in_the_slots_folders_is_not_followed(
    files_dir: Path, folders: BrowserFolders, secret: Path
) -> None:
    (folders.downloads / "report.pdf").symlink_to(secret)
    with pytest.raises(FileRefused):
        stage_upload("report.pdf", files_dir, folders)
    with pytest.raises(FileRefused):
        stage_upload(str(folders.downloads / "report.pdf"), files_dir, folders)


def test_an_uploads_folder_swapped_for_a_link_receives_nothing(
    files_dir: Path, folders: BrowserFolders, tmp_path: Path
) -> None:
    (files_dir / "report.csv").write_text("x")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    folders.uploads.rmdir()
    folders.uploads.symlink_to(elsewhere)
    with pytest.raises(FileRefused):
        stage_upload("report.csv", files_dir, folders)
    assert list(elsewhere.iterdir()) == []


def test_a_fifo_is_refused_without_hanging(files_dir: Path, folders: BrowserFolders) -> None:
    os.mkfifo(folders.downloads / "pipe.txt")
    with pytest.raises(FileRefused):
        stage_upload("pipe.txt", files_dir, folders)


def test_open_confined_refuses_a_path_that_resolves_outside(tmp_path: Path, secret: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    (root / "in.txt").write_text("in")
    with open_confined(root / "in.txt", (root,)) as fd:
        assert os.read(fd, 10) == b"in"
    with pytest.raises(FileRefused), open_confined(secret, (root,)):
        pass


# -- downloads moved into the session --------------------------------------------------------------------------
def test_finished_downloads_move_and_links_stay(files_dir: Path, folders: BrowserFolders, secret: Path) -> None:
    (folders.downloads / "a.pdf").write_bytes(b"A")
    (folders.downloads / "b.crdownload").write_bytes(b"partial")
    (folders.downloads / "evil.txt").symlink_to(secret)
    (folders.downloads / "sub").mkdir()
    (files_dir / "downloads").mkdir()
    (files_dir / "downloads" / "a.pdf").write_bytes(b"older")
    moved = move_files(folders.downloads, files_dir / "downloads")
    assert moved.landed == [files_dir / "downloads" / "a (1).pdf"]
    assert (files_dir / "downloads" / "a (1).pdf").read_bytes() == b"A"
    assert (files_dir / "downloads" / "a.pdf").read_bytes() == b"older"
    assert sorted(p.name for p in folders.downloads.iterdir()) == ["b.crdownload", "evil.txt", "sub"]
    assert not (files_dir / "downloads" / "evil.txt").exists()
    assert move_files(folders.downloads / "missing", files_dir / "downloads").landed == []


# -- browser-use's own file actions ---------------------------------------------------------------------------
async def test_browser_use_file_system_keeps_writes_inside_its_folder(tmp_path: Path, secret: Path) -> None:
    file_system = FileSystem(tmp_path / "agent")
    for name in ("../../escape.md", str(tmp_path / "escape.md"), "/etc/escape.md"):
        await file_system.write_file(name, "written")
        await file_system.replace_file_str(name, "written", "replaced")
    assert not (tmp_path / "escape.md").exists() and not Path("/etc/escape.md").exists()
    assert (file_system.get_dir() / "escape.md").read_text() == "replaced"
    assert "sk-secret" not in await file_system.read_file(str(secret))
    assert "sk-secret" not in await file_system.read_file("../.env")


def test_an_outside_read_copies_only_confined_files(files_dir: Path, folders: BrowserFolders, secret: Path) -> None:
    (folders.downloads / "data.csv").write_text("x,y\n")
    roots = (files_dir, *folders.file_input_roots)
    quota = AreaQuota.of(files_dir, 1)
    copy = _private_copy(str(folders.downloads / "data.csv"), roots, files_dir, quota)
    assert copy.read_text() == "x,y\n" and copy.is_relative_to(files_dir)
    (folders.downloads / "link.csv").symlink_to(secret)
    for path in (str(secret), str(folders.downloads / "link.csv")):
        with pytest.raises(FileRefused):
            _private_copy(path, roots, files_dir, quota)
    with (folders.downloads / "sparse.csv").open("wb") as sparse:  # no blocks, but a copy would write 4 GiB
        sparse.truncate(4 << 30)
    with pytest.raises(OverQuota, match=r"capped at 1\.0 MiB"):
        _private_copy(str(folders.downloads / "sparse.csv"), roots, files_dir, quota)


def test_downloads_past_the_file_areas_cap_are_refused_by_their_apparent_size(
    files_dir: Path, folders: BrowserFolders
) -> None:
    with (folders.downloads / "sparse.bin").open("wb") as sparse:
        sparse.truncate(4 << 30)
    (folders.downloads / "half.bin").write_bytes(b"h" * (600 << 10))
    (folders.downloads / "more.bin").write_bytes(b"m" * (600 << 10))
    (folders.downloads / "small.txt").write_bytes(b"s" * 1000)
    moved = move_files(folders.downloads, files_dir / "downloads", AreaQuota.of(files_dir, 1))
    assert sorted(path.name for path in moved.landed) == ["half.bin", "small.txt"]
    assert sorted(refused.name for refused in moved.refused) == ["more.bin", "sparse.bin"]
    assert all(isinstance(refused, OverQuota) and refused.limit == 1 << 20 for refused in moved.refused)
    kept = sum(path.stat().st_size for path in (files_dir / "downloads").iterdir())
    assert kept <= 1 << 20
    assert sorted(path.name for path in folders.downloads.iterdir()) == ["more.bin", "sparse.bin"]
