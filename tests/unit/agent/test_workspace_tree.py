"""A workspace's files on disk (spec §27.1, §27.2): links are never followed, writes land whole or not at all."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from openbrowse.agent.files import workspace_tree as tree


def test_links_are_neither_listed_nor_followed(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("secret")
    root = tmp_path / "ws"
    (root / "uploads").mkdir(parents=True)
    (root / "uploads" / "ok.txt").write_text("ok")
    os.symlink(outside / "secret.txt", root / "uploads" / "link.txt")
    os.symlink(outside, root / "linked-folder")
    assert [entry.path for entry in tree.walk(root)] == ["uploads/ok.txt"]
    assert tree.open_file(root, "uploads/link.txt") is None
    assert tree.open_file(root, "linked-folder/secret.txt") is None
    with pytest.raises(NotADirectoryError, match="not a folder"):
        tree.write_bytes(root, "linked-folder/new.txt", b"x", 1 << 20)  # never written through the link
    assert not (outside / "new.txt").exists()


def test_a_write_replaces_atomically_and_keeps_to_the_limit(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    tree.write_bytes(root, "out/a.txt", b"first", 100)
    tree.write_bytes(root, "out/a.txt", b"second", 100)  # replacing frees what it replaces
    assert tree.read_bytes(root, "out/a.txt", 100) == b"second"
    with pytest.raises(tree.NoRoom):
        tree.write_bytes(root, "out/b.txt", b"x" * 95, 100)
    assert sorted(p.name for p in (root / "out").iterdir()) == ["a.txt"]  # no hidden leftovers
    assert tree.delete_file(root, "out/a.txt")
    assert tree.walk(root) == []
