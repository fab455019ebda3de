"""Which files may go into a page (only ``uploads/``) and what a download may be renamed to (only a plain name)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from openbrowse.control.errors import ControlError
from openbrowse.control.transfers import download_file_name, upload_paths
from openbrowse.domain.browser_folders import BrowserFolders


@pytest.fixture
def folders(tmp_path: Path) -> BrowserFolders:
    made = BrowserFolders(uploads=tmp_path / "uploads", downloads=tmp_path / "downloads").ensure()
    (made.uploads / "cv.pdf").write_bytes(b"%PDF")
    (tmp_path / "secret.txt").write_text("no")
    return made


def test_plain_name_means_a_file_in_uploads(folders: BrowserFolders) -> None:
    assert upload_paths(folders, ["cv.pdf"]) == [os.path.realpath(folders.uploads / "cv.pdf")]


def test_absolute_path_inside_uploads_is_taken(folders: BrowserFolders) -> None:
    assert upload_paths(folders, str(folders.uploads / "cv.pdf")) == [os.path.realpath(folders.uploads / "cv.pdf")]


@pytest.mark.parametrize("bad", ["../secret.txt", "sub/../../secret.txt", "/etc/passwd", "relative/cv.pdf"])
def test_paths_outside_uploads_are_forbidden(folders: BrowserFolders, bad: str) -> None:
    with pytest.raises(ControlError) as caught:
        upload_paths(folders, [bad])
    assert caught.value.status == 403
    assert "uploads folder" in caught.value.message


def test_a_link_out_of_uploads_is_forbidden(folders: BrowserFolders, tmp_path: Path) -> None:
    (folders.uploads / "link.txt").symlink_to(tmp_path / "secret.txt")
    with pytest.raises(ControlError) as caught:
        upload_paths(folders, ["link.txt"])
    assert caught.value.status == 403


def test_downloads_folder_is_not_an_upload_source(folders: BrowserFolders) -> None:
    (folders.downloads / "got.txt").write_text("x")
    with pytest.raises(ControlError) as caught:
        upload_paths(folders, [str(folders.downloads / "got.txt")])
    assert caught.value.status == 403


@pytest.mark.parametrize("bad", [[], "", None, [""], [3]])
def test_missing_paths_are_a_bad_request(folders: BrowserFolders, bad: object) -> None:
    with pytest.raises(ControlError) as caught:
        upload_paths(folders, bad)
    assert caught.value.status == 400


def test_a_missing_file_is_a_bad_request(folders: BrowserFolders) -> None:
    with pytest.raises(ControlError) as caught:
        upload_paths(folders, ["absent.pdf"])
    assert caught.value.status == 400


def test_download_names(folders: BrowserFolders) -> None:
    assert download_file_name(folders, "report.pdf") == "report.pdf"
    assert download_file_name(folders, str(folders.downloads / "report.pdf")) == "report.pdf"


@pytest.mark.parametrize("bad", ["../report.pdf", "sub/report.pdf", "/tmp/report.pdf", "..", "."])
def test_download_names_outside_downloads_are_forbidden(folders: BrowserFolders, bad: str) -> None:
    with pytest.raises(ControlError) as caught:
        download_file_name(folders, bad)
    assert caught.value.status == 403
