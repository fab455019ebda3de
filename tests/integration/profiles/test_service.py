"""ProfileService on real SQLite and real PostgreSQL: CRUD, import, snapshots, merges (across processes too),
deletion, and the move of an older install's jar files into the database."""

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

from openbrowse.domain.clock import utc_now
from openbrowse.domain.ids import ProfileId
from openbrowse.domain.profiles import ProfileRecord
from openbrowse.errors import MalformedRequest, ProfileNotFound
from openbrowse.profiles.files import JarFiles, write_private_json
from openbrowse.profiles.service import ProfileService
from openbrowse.store.db import Database
from openbrowse.store.profiles import ProfileRepo
from openbrowse.store.target import StoreTarget

LATER = time.time() + 86_400


def ck(name: str, value: str) -> dict[str, Any]:
    return {"name": name, "value": value, "domain": ".example.com", "path": "/", "expires": LATER}


@pytest.fixture
async def service(store_target: StoreTarget) -> AsyncIterator[ProfileService]:
    async with Database(store_target) as db:
        yield ProfileService(ProfileRepo(db))


async def test_crud_and_paging(service: ProfileService) -> None:
    first = await service.create("Billing", None)
    second = await service.create(None, "User-7")
    assert await service.export_state(first.id) == {"cookies": [], "origins": []}
    records, total = await service.page(1, 1, None)
    assert total == 2 and [r.id for r in records] == [second.id]
    assert [r.id for r in (await service.page(1, 10, "bill"))[0]] == [first.id]
    assert [r.id for r in (await service.page(1, 10, "user-7"))[0]] == [second.id]
    assert (await service.page(1, 10, "%"))[1] == 0
    updated = await service.update(first.id, name=None, user_id="u")
    assert updated.name == "Billing" and updated.user_id == "u"
    await service.delete(first.id)
    with pytest.raises(ProfileNotFound):
        await service.get(first.id)
    with pytest.raises(ProfileNotFound):
        await service.export_state(first.id)
    with pytest.raises(ProfileNotFound):
        await service.delete(first.id)


async def test_import_creates_by_id_and_backs_up(service: ProfileService, store_target: StoreTarget) -> None:
    record = await service.import_state("cloud.1", {"cookies": [ck("a", "1")]})
    assert record.id == "cloud.1" and record.cookie_domains == ("example.com",)
    await service.import_state("cloud.1", {"cookies": [ck("b", "2")], "origins": []})
    async with Database(store_target) as db:
        stored = await db.scalar("SELECT jar_backup FROM profiles WHERE id = 'cloud.1'")
    assert [c["name"] for c in json.loads(stored)["cookies"]] == ["a"]
    assert [c["name"] for c in (await service.export_state("cloud.1"))["cookies"]] == ["b"]
    with pytest.raises(MalformedRequest):
        await service.import_state("../etc", {"cookies": []})
    with pytest.raises(MalformedRequest):
        await service.import_state("ok", ["not", "a", "state"])
    assert not await service.exists("ok")
    await service.delete("cloud.1")


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
    with pytest.raises(ProfileNotFound):
        await service.snapshot("p", base_path)


async def test_concurrent_merges_never_lose_a_change(service: ProfileService) -> None:
    record = await service.create(None, None)
    base = await service.export_state(record.id)
    ours = [{"cookies": [ck(f"c{i}", str(i))], "origins": []} for i in range(8)]
    await asyncio.gather(*(service.merge_back(record.id, base, jar) for jar in ours))
    names = {c["name"] for c in (await service.export_state(record.id))["cookies"]}
    assert names == {f"c{i}" for i in range(8)}


_MERGER = """
import asyncio, sys, time
from openbrowse.profiles.service import ProfileService
from openbrowse.store.db import Database
from openbrowse.store.profiles import ProfileRepo
from openbrowse.store.target import StoreTarget
from openbrowse.store.target import StoreTarget

async def main() -> None:
    target, profile_id, prefix = sys.argv[1], sys.argv[2], sys.argv[3]
    later = time.time() + 86_400
    target = StoreTarget.parse(target)
    async with Database(target) as db:
        service = ProfileService(ProfileRepo(db))
        base = {"cookies": [], "origins": []}
        for i in range(40):
            cookie = {"name": f"{prefix}{i}", "value": "v", "domain": ".example.com", "path": "/", "expires": later}
            await service.merge_back(profile_id, base, {"cookies": [cookie], "origins": []})

asyncio.run(main())
"""


async def test_processes_merging_into_one_profile_lose_no_update(
    service: ProfileService, store_target: StoreTarget
) -> None:
    """Spec §26.1: the merge holds the profile's row in the database, so writers in three processes (three nodes)
    sharing one profile each read what the other wrote; every one of their 20 cookies is kept."""
    record = await service.create(None, None)
    url = store_target.url.render_as_string(hide_password=False)
    if store_target.kind == "sqlite":
        url = f"sqlite:///{store_target.sqlite_path}"
    mergers = [
        await asyncio.create_subprocess_exec(sys.executable, "-c", _MERGER, url, record.id, prefix)
        for prefix in ("a", "b", "c")
    ]
    assert [await merger.wait() for merger in mergers] == [0, 0, 0]
    names = {c["name"] for c in (await service.export_state(record.id))["cookies"]}
    assert names == {f"{prefix}{i}" for prefix in "abc" for i in range(40)}


async def test_jar_files_of_an_older_install_move_into_the_database(tmp_path: Path) -> None:
    """An install from before keeps its jars: their files are taken into the rows at start, then removed."""
    directory = tmp_path / "profiles"
    async with Database(tmp_path / "store.db") as db:
        rows = ProfileRepo(db)
        now = utc_now()
        for profile_id in ("old", "lost"):
            await rows.insert(
                ProfileRecord(id=ProfileId(profile_id), name=None, user_id=None, created_at=now, updated_at=now)
            )
        files = JarFiles(directory)
        files.write("old", {"cookies": [ck("sid", "1")], "origins": []})
        write_private_json(files.backup_path("old"), {"cookies": [ck("sid", "0")], "origins": []})
        service = ProfileService(rows)
        assert await service.adopt_files(directory) == 2
        assert [c["value"] for c in (await service.export_state("old"))["cookies"]] == ["1"]
        assert await service.export_state("lost") == {"cookies": [], "origins": []}
        assert list(directory.iterdir()) == []
        assert await service.adopt_files(directory) == 0


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
    assert sorted(p.name for p in directory.iterdir() if not p.name.endswith(".tmp")) == ["p.json"]
    assert directory.stat().st_mode & 0o777 == 0o700
