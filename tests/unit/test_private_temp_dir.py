"""The parent of the server's scratch dirs is its own: a real directory, owned by it, mode 0700 (issue 31)."""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path

import pytest

from openbrowse.bootstrap import private_temp_dir
from openbrowse.errors import ConfigError


def test_it_is_made_private(tmp_path: Path) -> None:
    folder = private_temp_dir(tmp_path / "run" / "tmp")
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700 and folder.stat().st_uid == os.geteuid()
    scratch = Path(tempfile.mkdtemp(dir=folder))
    assert scratch.parent == folder and stat.S_IMODE(scratch.stat().st_mode) == 0o700


def test_an_open_folder_left_from_before_is_closed(tmp_path: Path) -> None:
    folder = tmp_path / "tmp"
    folder.mkdir()
    folder.chmod(0o777)
    private_temp_dir(folder)
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700


def test_a_link_in_its_place_is_refused_and_its_target_untouched(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(mode=0o755)
    (tmp_path / "tmp").symlink_to(elsewhere)
    with pytest.raises(ConfigError, match="is a link or not a directory"):
        private_temp_dir(tmp_path / "tmp")
    assert stat.S_IMODE(elsewhere.stat().st_mode) == 0o755
