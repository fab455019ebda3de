"""The domain vocabulary: money on the wire, time, ids, the feed, session and browser records, browser folders."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime, timedelta, timezone
from decimal import Decimal
from pathlib import Path

import pytest

from openbrowse.domain.activity import Activity, ActivityKind
from openbrowse.domain.browser_folders import BrowserFolders, is_inside, real_path_inside
from openbrowse.domain.browsers import BrowserRecord, BrowserStatus
from openbrowse.domain.clock import from_wire, to_wire
from openbrowse.domain.feed import EVENT_SUMMARY_LIMIT, EventCategory, FeedEntry, MessageType, clip
from openbrowse.domain.ids import BrowserId, SessionId, is_uuid, new_browser_id, new_message_id, new_session_id
from openbrowse.domain.money import ceil_cents, format_usd, to_decimal
from openbrowse.domain.profiles import ID_LIMIT, is_valid_profile_id, new_profile_id
from openbrowse.domain.sessions import SessionRecord, SessionStatus

T0 = datetime(2026, 8, 18, 9, 14, 2, 881234, tzinfo=UTC)


# -- money -----------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "wire"),
    [
        (None, "0"),
        (0, "0"),
        (Decimal("0.000000001"), "0"),
        ("1.50", "1.5"),
        (2, "2"),
        (0.1, "0.1"),
        (Decimal("1E-7"), "0.0000001"),
        (Decimal("0.123456789"), "0.12345679"),
        (Decimal("1234567.10"), "1234567.1"),
    ],
)
def test_money_is_plain_decimal_text_with_at_most_eight_places(
    value: Decimal | float | int | str | None, wire: str
) -> None:
    assert format_usd(value) == wire


def test_money_conversion_and_cents() -> None:
    assert to_decimal(0.1) == Decimal("0.1")  # via repr: no binary float noise
    with pytest.raises(ValueError, match="finite"):
        to_decimal(float("inf"))
    assert ceil_cents("0.001") == Decimal("0.01")
    assert ceil_cents(Decimal("1.20")) == Decimal("1.20")
    assert ceil_cents("1.201") == Decimal("1.21")


# -- time and ids ----------------------------------------------------------------------------------------------------


def test_wire_time_is_utc_with_microseconds_and_round_trips() -> None:
    plus_two = T0.astimezone(timezone(timedelta(hours=2)))
    assert to_wire(plus_two) == "2026-08-18T09:14:02.881234+00:00"
    assert from_wire(to_wire(T0)) == T0
    assert to_wire(T0.replace(microsecond=0)).endswith(".000000+00:00")


def test_ids_are_fresh_uuids() -> None:
    made = [new_session_id(), new_message_id(), new_browser_id(), new_profile_id()]
    assert all(is_uuid(value) for value in made) and len(set(made)) == len(made)
    assert not is_uuid("not-a-uuid") and not is_uuid("")


@pytest.mark.parametrize(
    ("value", "valid"),
    [("work.profile_1-a", True), ("a..b", False), (".", False), ("a/b", False), ("", False), ("x" * ID_LIMIT, True)],
)
def test_imported_profile_ids_are_safe_file_names(value: str, valid: bool) -> None:
    assert is_valid_profile_id(value) is valid
    assert not is_valid_profile_id("x" * (ID_LIMIT + 1))


# -- the feed --------------------------------------------------------------------------------------------------------


def test_clip_marks_the_cut() -> None:
    assert clip("short", 10) == "short"
    assert clip("abcdef", 4) == "abc…"
    assert len(clip("x" * 500, 200)) == 200


def test_feed_entries_by_kind() -> None:
    user = FeedEntry.user_message("Find the price")
    assert (user.type, user.role, user.data_text()) == (MessageType.USER_MESSAGE, "user", "")
    event = FeedEntry.event(EventCategory.CODE, "ran", "x" * 300, file="a.py", at=T0)
    assert (event.type, event.role) == (MessageType.EVENT, "ai")
    assert len(event.summary) == EVENT_SUMMARY_LIMIT
    assert json.loads(event.data_text()) == {"category": "code", "action": "ran", "file": "a.py", "at": str(T0)}
    system = FeedEntry.system("started", "Session started")
    assert json.loads(system.data_text())["category"] == "system"
    assert FeedEntry(MessageType.RESULT, "r").data_text() == "{}"


# -- records ---------------------------------------------------------------------------------------------------------


def _session(**changes: object) -> SessionRecord:
    record = SessionRecord(
        id=SessionId("s"),
        status=SessionStatus.CREATED,
        model="m",
        llm_model="m",
        reasoning_effort="high",
        created_at=T0,
        updated_at=T0,
    )
    return record.evolve(**changes)


def test_session_costs_deadline_and_queue() -> None:
    plain = _session()
    assert plain.total_cost_usd == 0 and plain.ends_at is None and not plain.overdue(T0 + timedelta(days=9))
    costly = _session(llm_cost_usd=Decimal("0.25"), captcha_cost_usd=Decimal("0.003"))
    assert costly.total_cost_usd == Decimal("0.253")
    limited = _session(max_duration_ms=10_000)
    assert limited.ends_at == T0 + timedelta(seconds=10)
    assert not limited.overdue(T0 + timedelta(seconds=9.999)) and limited.overdue(T0 + timedelta(seconds=10))
    assert _session(pending_task="go").is_queued
    assert not _session(status=SessionStatus.RUNNING, pending_task="go").is_queued
    assert plain.status is SessionStatus.CREATED  # evolve copies, never mutates


def test_browser_record_states() -> None:
    live = BrowserRecord(
        id=BrowserId("b"),
        status=BrowserStatus.ACTIVE,
        timeout_minutes=1.5,
        started_at=T0,
        timeout_at=T0 + timedelta(minutes=1.5),
    )
    assert (live.active, live.live, live.starting, live.max_duration_ms) == (True, True, False, 90_000)
    queued = live.evolve(queue_expires_at=T0 + timedelta(minutes=15))
    assert (queued.live, queued.starting) == (False, True)
    stopped = live.evolve(status=BrowserStatus.STOPPED)
    assert (stopped.active, stopped.live, stopped.starting) == (False, False, False)


def test_activity_spins_until_text_streams() -> None:
    assert Activity("Reasoning", ActivityKind.REASONING, T0).spin
    assert not Activity("Reasoning", ActivityKind.REASONING, T0, stream="Looking").spin


# -- browser folders -------------------------------------------------------------------------------------------------


def test_paths_inside_the_browser_folders_by_real_path(tmp_path: Path) -> None:
    folders = BrowserFolders(tmp_path / "slot" / "uploads", tmp_path / "slot" / "downloads").ensure()
    assert folders.uploads.is_dir() and folders.downloads.is_dir()
    assert folders.ensure() is folders  # idempotent
    saved = folders.downloads / "report.pdf"
    saved.write_text("x")
    assert real_path_inside(saved, folders.file_input_roots) == str(saved)
    assert real_path_inside("report.pdf", folders.file_input_roots) is None  # relative: refused
    assert real_path_inside(f"{saved}\x00", folders.file_input_roots) is None
    outside = tmp_path / "secret.txt"
    outside.write_text("s")
    link = folders.uploads / "link.txt"
    os.symlink(outside, link)
    assert not is_inside(link, folders.uploads)  # a link never carries a path out
    assert is_inside(folders.uploads, folders.uploads)
    assert not is_inside(tmp_path / "slot" / "uploads-evil", folders.uploads)
