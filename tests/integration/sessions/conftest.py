"""A real SessionManager over real SQLite, driving scripted engines (see ``harness.py``)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from openbrowse.config import Settings
from openbrowse.sessions.manager import SessionManager
from openbrowse.sessions.runtime import WorkerRuntime
from openbrowse.store.db import Database
from openbrowse.store.feed import FeedRepo
from openbrowse.store.profiles import ProfileRepo
from openbrowse.store.sessions import SessionRepo
from tests.integration.sessions.harness import AnyRunStarts, Engines, FakePool


class HookedProfiles(ProfileRepo):
    """Every profile exists; ``on_lookup`` runs inside the lookup (a point inside a follow-up's hand-over)."""

    on_lookup: Callable[[], None] | None = None

    async def exists(self, profile_id: str) -> bool:
        if self.on_lookup is not None:
            self.on_lookup()
        return True


@dataclass
class Harness:
    settings: Settings
    db: Database
    pool: FakePool
    engines: Engines
    profiles: HookedProfiles
    manager: SessionManager


HarnessFactory = Callable[..., Awaitable[Harness]]


@pytest.fixture
async def harness_factory(tmp_path: Path) -> AsyncIterator[HarnessFactory]:
    """Build a harness; every manager is shut down (and checked for leftovers) at the end of the test."""
    built: list[Harness] = []

    async def build(capacity: int = 2, repo: type[SessionRepo] = SessionRepo, **settings: object) -> Harness:
        config = Settings(OPENBROWSE_HOME=tmp_path, **settings)  # type: ignore[arg-type]
        db = Database(config.db_path)
        await db.open()
        sessions, feed, profiles = repo(db), FeedRepo(db), HookedProfiles(db)
        pool, engines = FakePool(capacity), Engines()
        runtime = WorkerRuntime(
            config, sessions, feed, pool, make_engine=engines.make, policy=AnyRunStarts(),
        )  # fmt: skip
        manager = SessionManager(config, sessions, feed, profiles, runtime)
        await manager.__aenter__()
        harness = Harness(config, db, pool, engines, profiles, manager)
        built.append(harness)
        return harness

    yield build
    for harness in built:
        await harness.manager.aclose()
        assert harness.manager.workers() == []
        assert harness.pool.leases == {}, "a slot was left held"
        assert harness.engines.live == set(), "a browser was left open"
        await harness.db.aclose()


@pytest.fixture
async def harness(harness_factory: HarnessFactory) -> Harness:
    return await harness_factory()
