"""What a slot's processes are given of the host (spec §24.3): an environment built from scratch, and only the
entries of ``/etc`` the browser needs."""

from __future__ import annotations

from pathlib import Path

import pytest

from openbrowse.slots.etc_view import etc_binds
from openbrowse.slots.slot_files import child_environment


def test_the_environment_of_slot_children_is_built_from_scratch(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "ALL_PROXY", "NO_PROXY"):
        monkeypatch.setenv(name, "http://user:secret@proxy.example:3128")
    for name in ("OPENAI_API_KEY", "API_KEY", "DASHBOARD_PASSWORD", "XDG_RUNTIME_DIR", "SSH_AUTH_SOCK", "TMPDIR"):
        monkeypatch.setenv(name, "secret")
    monkeypatch.setenv("LANG", "de_DE.UTF-8")
    monkeypatch.setenv("LC_TIME", "de_DE.UTF-8")
    monkeypatch.setenv("TZ", "Europe/Berlin")
    env = child_environment("tag-1")
    assert "secret" not in " ".join(env.values())
    assert set(env) <= {"PATH", "LANG", "LANGUAGE", "TZ", "LC_TIME", "HOME", "OPENBROWSE_SLOT_TAG"}
    assert env["LANG"] == "de_DE.UTF-8" and env["TZ"] == "Europe/Berlin" and env["LC_TIME"] == "de_DE.UTF-8"
    assert env["PATH"]


def test_only_the_listed_entries_of_etc_are_bound(tmp_path: Path) -> None:
    etc = tmp_path / "etc"
    for name in ("shadow", "hostname", "environment", "ld.so.cache", "mime.types"):
        (etc / name).parent.mkdir(parents=True, exist_ok=True)
        (etc / name).write_text(name)
    for folder in ("ssh", "ssl/private", "ssl/certs", "fonts", "apt"):
        (etc / folder).mkdir(parents=True)
    (etc / "localtime").symlink_to("/usr/share/zoneinfo/Etc/UTC")
    args = etc_binds(etc)
    bound = {args[i + 2] for i, arg in enumerate(args) if arg == "--ro-bind"}
    assert bound == {"/etc/ld.so.cache", "/etc/mime.types", "/etc/ssl/certs", "/etc/fonts"}
    assert args[args.index("--symlink") :][:3] == ["--symlink", "/usr/share/zoneinfo/Etc/UTC", "/etc/localtime"]
    made = [args[i + 1] for i, arg in enumerate(args) if arg == "--dir"]
    assert made == ["/etc", "/etc/ssl"]  # made 0755 (bubblewrap would make a missing parent 0700)
    assert all(args[i - 1] == "0755" for i, arg in enumerate(args) if arg == "--dir")
