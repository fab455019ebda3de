"""ProfileService on real SQLite and real files: CRUD, import, snapshots, merges, deletion and the lock."""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from openbrowse.errors import MalformedRequest, ProfileNotFound
from openbrowse.profiles.service import ProfileService, prepare_directory
from openbrowse.store.db import Database
from openbrowse.store.profiles import ProfileRepo

LATER = time.time() + 86_400


def ck(name: str, value: str) -> dict[str, Any]:
    return {"name": name, "value": value, "domain": ".example.com", "path": "/", "expires": LATER}


@pytest.fixture
async def service(tmp_path: Path) -> AsyncIterator[ProfileService]:
    async with Database(tmp_path / "db.sqlite") as db:
        prepare_directory(tmp_path / "profiles")
        yield ProfileService(ProfileRepo(db), tmp_path / "profiles")


async def test_crud_and_paging(service: ProfileService, tmp_path: Path) -> None:
    first = await service.create("Billing", None)
    second = await service.create(None, "User-7")
    assert (tmp_path / "profiles" / f"{first.id}.json").read_text() == '{"cookies":[],"origins":[]}'
    records, total = await service.page(1, 1, None)
    assert total == 2 and [r.id for r in records] == [second.id]
    assert [r.id for r in (await service.page(1, 10, "bill"))[0]] == [first.id]
    assert [r.id for r in (await service.page(1, 10, "user-7"))[0]] == [second.id]
    assert (await service.page(1, 10, "%"))[1] == 0
    updated = await service.update(first.id, name=None, user_id="u")
    assert updated.name == "Billing" and updated.user_id == "u"
    await service.delete(first.id)
    assert not (tmp_path / "profiles" / f"{first.id}.json").exists()
    with pytest.raises(ProfileNotFound):
        await service.get(first.id)
    with pytest.raises(ProfileNotFound):
        await service.delete(first.id)


async def test_import_creates_by_id_and_backs_up(service: ProfileService, tmp_path: Path) -> None:
    record = await service.import_state("cloud.1", {"cookies": [ck("a", "1")]})
    assert record.id == "cloud.1" and record.cookie_domains == ("example.com",)
    await service.import_state("cloud.1", {"cookies": [ck("b", "2")], "origins": []})
    backup = json.loads((tmp_path / "profiles" / "cloud.1.json.import-bak").read_text())
    assert [c["name"] for c in backup["cookies"]] == ["a"]
    assert [c["name"] for c in (await service.export_state("cloud.1"))["cookies"]] == ["b"]
    with pytest.raises(MalformedRequest):
        await service.import_state("../etc", {"cookies": []})
    with pytest.raises(MalformedRequest):
        await service.import_state("ok", ["not", "a", "state"])
    assert not await service.exists("ok")
    await service.delete("cloud.1")
    assert list((tmp_path / "profiles").iterdir()) == []


async def test_snapshot_and_merge_back(service: ProfileService, tmp_path: Path) -> None:
    record = await service.import_state("p", {"cookies": [ck("sid", "1")]})
    assert record.last_used_at is None
    base_path = tmp_path / "sessions" / "s1" / "profile_base.json"
    base = await service.snapshot("p", base_path)
    assert json.loads(base_path.read_text()) == base and base_path.stat().st_mode & 0o777 == 0o600
    assert (await service.get("p")).last_used_at is not None
    await service.import_state("p", {"cookies": [ck("sid", "1"), ck("other", "x")]})  # a concurrent change
    report = await service.merge_back("p", base, {"cookies": [ck("sid", "2")], "origins": []})
    merged = await service.export_state("p")
    assert {c["name"]: c["value"] for c in merged["cookies"]} == {"sid": "2", "other": "x"}
    assert report.cookies == 2
    await service.delete("p")
    with pytest.raises(ProfileNotFound):
        await service.merge_back("p", base, merged)
    assert not (tmp_path / "profiles" / "p.json").exists()
    with pytest.raises(ProfileNotFound):
        await service.snapshot("p", base_path)


async def test_concurrent_merges_never_lose_a_change(service: ProfileService) -> None:
    record = await service.create(None, None)
    base = await service.export_state(record.id)
    ours = [{"cookies": [ck(f"c{i}", str(i))], "origins": []} for i in range(8)]
    await asyncio.gather(*(service.merge_back(record.id, base, jar) for jar in ours))
    names = {c["name"] for c in (await service.export_state(record.id))["cookies"]}
    assert names == {f"c{i}" for i in range(8)}


_WRITER = """
import sys
from pathlib import Path
from openbrowse.profiles.files import JarFiles
files = JarFiles(Path(sys.argv[1]))
big = [{"name": f"c{i}", "value": "v" * 200, "domain": "e.com"} for i in range(2000)]
n = 0
while True:
    files.write("p", {"cookies": big, "origins": [], "n": n})
    n += 1
    if n == 3:
        print("writing", flush=True)
"""


def test_a_writer_killed_mid_write_leaves_a_whole_jar(tmp_path: Path) -> None:
    directory = tmp_path / "profiles"
    process = subprocess.Popen([sys.executable, "-c", _WRITER, str(directory)], stdout=subprocess.PIPE)
    try:
        assert process.stdout is not None and process.stdout.readline() == b"writing\n"
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait(10)
    jar = json.loads((directory / "p.json").read_text())
    assert len(jar["cookies"]) == 2000 and jar["n"] >= 2
    prepare_directory(directory)
    assert sorted(p.name for p in directory.iterdir()) == ["p.json"]
    assert directory.stat().st_mode & 0o777 == 0o700
