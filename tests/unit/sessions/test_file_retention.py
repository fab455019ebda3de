"""Ended raw browsers' files go after ``ARTIFACT_RETENTION_HOURS``; live ones and unknown folders stay (§22.3)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, cast

from openbrowse.config import Settings
from openbrowse.domain.browsers import BrowserRecord, BrowserStatus
from openbrowse.domain.ids import BrowserId
from openbrowse.sessions.browsers import BrowserService
from openbrowse.sessions.file_area import FileAreas
from openbrowse.sessions.manager import SessionManager

NOW = datetime(2026, 8, 18, 12, 0, tzinfo=UTC)


class Browsers:
    """What the sweep asks of the browser service: rows by id."""

    def __init__(self, records: dict[str, BrowserRecord]) -> None:
        self.records = records

    async def find(self, browser_id: str) -> BrowserRecord | None:
        return self.records.get(browser_id)


def record(browser_id: str, status: BrowserStatus, finished_at: datetime | None) -> BrowserRecord:
    return BrowserRecord(
        id=BrowserId(browser_id),
        status=status,
        timeout_minutes=15,
        started_at=NOW - timedelta(days=30),
        timeout_at=NOW,
        finished_at=finished_at,
    )


async def test_only_browsers_ended_longer_ago_than_the_retention_lose_their_files(tmp_path: Path) -> None:
    settings = Settings(OPENBROWSE_HOME=tmp_path, ARTIFACT_RETENTION_HOURS=24)
    records = {
        "old": record("old", BrowserStatus.STOPPED, NOW - timedelta(hours=25)),
        "recent": record("recent", BrowserStatus.STOPPED, NOW - timedelta(hours=23)),
        "live": record("live", BrowserStatus.ACTIVE, None),
    }
    root = settings.data_dir / "browsers"
    for name in ("old", "recent", "live", "unknown"):
        (root / name / "downloads").mkdir(parents=True)
        (root / name / "downloads" / "file.bin").write_bytes(b"x")
    areas = FileAreas(
        settings,
        cast("SessionManager", object()),
        cast("BrowserService", cast("Any", Browsers(records))),
        clock=lambda: NOW,
    )
    assert await areas.sweep_expired() == 1
    assert sorted(path.name for path in root.iterdir()) == ["live", "recent", "unknown"]
    assert await areas.sweep_expired() == 0
