"""The seam directory: root's, 0750 to the slot's group, and never reached through a link or a stranger's dir."""

from __future__ import annotations

import os
import secrets
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from openbrowse.slots.seam import SEAM_ROOT, SeamDir
from tests.support.ci_gate import required

pytestmark = required(None if os.geteuid() == 0 else "the seam directory is made by a server running as root")

SLOT_GID = 65534


@pytest.fixture
def instance() -> Iterator[Path]:
    path = SEAM_ROOT / f"test-{secrets.token_hex(4)}"
    yield path
    if path.is_symlink() or path.is_file():
        path.unlink()
    elif path.is_dir():
        for child in path.iterdir():
            if child.is_dir() and not child.is_symlink():
                child.rmdir()
            else:
                child.unlink()
        path.rmdir()


def _owner_mode(path: Path) -> tuple[int, int, int]:
    info = path.lstat()
    return info.st_uid, info.st_gid, stat.S_IMODE(info.st_mode)


def test_the_slots_files_are_roots_and_only_its_group_may_look_in(instance: Path) -> None:
    seam = SeamDir(instance / "0", SLOT_GID)
    seam.open()
    try:
        assert _owner_mode(seam.path) == (0, SLOT_GID, 0o750)
        token = seam.write_file("0.tokens", b"secret: unix_socket:/x\n", mode=0o640, group=True)
        passwd = seam.write_file("passwd", b"slot:x:1:1::/:/bin/false\n", mode=0o644)
        sock = seam.bind_socket("egress.sock")
        sock.close()
        assert _owner_mode(token) == (0, SLOT_GID, 0o640)
        assert _owner_mode(passwd) == (0, os.getegid(), 0o644)
        assert _owner_mode(seam.path / "egress.sock") == (0, SLOT_GID, 0o660)
    finally:
        seam.close()
    assert not seam.path.exists()


def test_a_link_planted_on_the_way_is_refused_not_followed(instance: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    instance.symlink_to(elsewhere)
    with pytest.raises(OSError, match=r"Too many levels of symbolic links|Not a directory"):
        SeamDir(instance / "0", SLOT_GID).open()
    assert list(elsewhere.iterdir()) == []


def test_a_strangers_directory_in_its_place_is_refused(instance: Path) -> None:
    instance.mkdir(mode=0o755)
    (instance / "0").mkdir(mode=0o777)
    os.chown(instance / "0", 65534, 65534)
    with pytest.raises(PermissionError):
        SeamDir(instance / "0", SLOT_GID).open()


def test_what_an_earlier_run_left_is_emptied(instance: Path) -> None:
    first = SeamDir(instance / "0", SLOT_GID)
    first.open()
    first.write_file("stale", b"x", mode=0o600)
    second = SeamDir(instance / "0", SLOT_GID)
    second.open()  # the first one was never closed (a killed server)
    try:
        assert list(second.path.iterdir()) == []
    finally:
        second.close()
        first.close()
