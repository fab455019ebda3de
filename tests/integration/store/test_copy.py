"""``openbrowse db copy``: an existing SQLite store moves into PostgreSQL whole (sessions, feeds, profiles with
their jars), ordered as before; a target that already holds data is refused with one sentence."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from openbrowse.__main__ import main
from openbrowse.domain.clock import utc_now
from openbrowse.domain.feed import FeedEntry, MessageType
from openbrowse.domain.ids import SessionId
from openbrowse.domain.sessions import SessionRecord, SessionStatus
from openbrowse.profiles.service import ProfileService
from openbrowse.store.db import Database
from openbrowse.store.feed import FeedRepo
from openbrowse.store.profiles import ProfileRepo
from openbrowse.store.sessions import SessionRepo
from openbrowse.store.target import StoreTarget
from tests.support.postgres import ThrowawayPostgres

SESSION = SessionId("00000000-0000-4000-8000-0000000000c0")
COOKIE = {"name": "sid", "value": "1", "domain": ".example.com", "path": "/", "expires": time.time() + 86_400}


async def _fill(target: StoreTarget) -> str:
    async with Database(target) as db:
        now = utc_now()
        record = SessionRecord(
            id=SESSION,
            status=SessionStatus.STOPPED,
            model="gpt-x",
            llm_model="gpt-x",
            reasoning_effort="none",
            task="find the price",
            created_at=now,
            updated_at=now,
        )
        await SessionRepo(db).insert(record)
        feed = FeedRepo(db)
        for step in range(3):
            await feed.append(SESSION, FeedEntry(type=MessageType.PLANNING, summary=f"step {step}", data={}))
        profiles = ProfileService(ProfileRepo(db))
        profile = await profiles.create("Shop", None)
        await profiles.import_state(profile.id, {"cookies": [COOKIE], "origins": []})
        return profile.id


async def _read(target: StoreTarget, profile_id: str) -> tuple[str | None, list[str], list[str], int]:
    async with Database(target) as db:
        session = await SessionRepo(db).get(SESSION)
        feed = FeedRepo(db)
        summaries = [message.summary for message in await feed.all(SESSION)]
        jar = await ProfileService(ProfileRepo(db)).export_state(profile_id)
        appended = await feed.append(SESSION, FeedEntry(type=MessageType.PLANNING, summary="after", data={}))
        last = max(message.seq for message in await feed.all(SESSION) if message.summary != "after")
        assert appended.seq > last  # the copy's counters continue past the copied rows
        return session.task, summaries, [cookie["name"] for cookie in jar["cookies"]], appended.seq


def test_a_sqlite_store_moves_into_postgresql(tmp_path: Path, throwaway_postgres: ThrowawayPostgres) -> None:
    source = f"sqlite:///{tmp_path / 'browser_use.db'}"
    target = throwaway_postgres.new_database()
    profile_id = asyncio.run(_fill(StoreTarget.parse(source)))
    assert main(["db", "copy", "--from", source, "--to", target]) == 0
    task, summaries, cookies, _ = asyncio.run(_read(StoreTarget.parse(target), profile_id))
    assert (task, summaries, cookies) == ("find the price", ["step 0", "step 1", "step 2"], ["sid"])


def test_a_target_with_data_is_refused(
    tmp_path: Path, throwaway_postgres: ThrowawayPostgres, capsys: pytest.CaptureFixture[str]
) -> None:
    source = f"sqlite:///{tmp_path / 'browser_use.db'}"
    target = throwaway_postgres.new_database()
    asyncio.run(_fill(StoreTarget.parse(source)))
    assert main(["db", "copy", "--from", source, "--to", target]) == 0
    assert main(["db", "copy", "--from", source, "--to", target]) == 2
    assert "copy into an empty database" in capsys.readouterr().err
