"""Session rows: the pydantic mapping of ``store/sessions.py`` against the hand mapping it replaced (issue 24).

    .venv/bin/python bench/store_rows.py [--iterations 5] [--markdown]

Reading a session row is the API's hot path (every poll that misses the view cache, every update's before and
after). Two rows go through the real migrations into an in-memory SQLite: a busy one (every column set: output,
schema, secrets, costs, failure, pause) and a fresh one (only the required columns). Each iteration maps both rows
3,000 times with each mapping, interleaved; the table shows the best iteration per mapping and their ratio. The
baseline is the hand mapping as of ``dda951a``, kept here only as the yardstick.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from openbrowse.domain.clock import from_wire
from openbrowse.domain.end_reasons import EndReason
from openbrowse.domain.failures import FailureKind
from openbrowse.domain.ids import SessionId
from openbrowse.domain.secrets import normalize_stored
from openbrowse.domain.sessions import SessionRecord, SessionStatus
from openbrowse.store import sessions as repo

MIGRATIONS = Path(__file__).resolve().parents[1] / "openbrowse" / "store" / "migrations"
CALLS = 3000


def hand_from_row(row: sqlite3.Row) -> SessionRecord:
    """The baseline: ``store/sessions.py``'s ``_from_row`` as of ``dda951a``."""
    values: dict[str, Any] = {}
    for name in repo._COLUMNS:
        raw = row[name]
        if raw is None:
            values[name] = None
        elif name in repo._JSON_COLUMNS:
            values[name] = json.loads(raw)
        elif name in repo._BOOL_COLUMNS or name == "is_task_successful":
            values[name] = bool(raw)
        elif name in repo._DECIMAL_COLUMNS:
            values[name] = Decimal(raw)
        elif name in {"created_at", "updated_at"}:
            values[name] = from_wire(raw)
        elif name == "status":
            values[name] = SessionStatus(raw)
        elif name == "failure_kind":
            values[name] = FailureKind(raw)
        elif name == "end_reason":
            values[name] = EndReason(raw)
        else:
            values[name] = raw
    for name in ("keep_alive", "browser_live"):
        values[name] = bool(values[name])
    values["sensitive_data"] = normalize_stored(values["sensitive_data"], values["task"])
    for name in ("llm_cost_usd", "captcha_cost_usd"):
        values[name] = values[name] if values[name] is not None else Decimal(0)
    return SessionRecord(**values)


def records() -> list[SessionRecord]:
    now = datetime.now(UTC)
    common: dict[str, Any] = {"model": "gpt", "llm_model": "gpt-x", "reasoning_effort": "low"}
    busy = SessionRecord(
        id=SessionId("busy"),
        status=SessionStatus.IDLE,
        created_at=now,
        updated_at=now,
        title="A title",
        task="Log in at https://shop.example and list the orders",
        keep_alive=True,
        output={"orders": [{"id": n, "total": "12.50"} for n in range(5)]},
        output_schema={"type": "object", "properties": {"orders": {"type": "array"}}},
        sensitive_data={"https://shop.example": {"password": "hunter2"}},
        step_count=12,
        last_step_summary="Read the orders table",
        is_task_successful=True,
        max_cost_usd=Decimal("1.50"),
        llm_cost_usd=Decimal("0.0123"),
        captcha_cost_usd=Decimal("0.002"),
        total_input_tokens=15000,
        total_output_tokens=900,
        failure_kind=next(iter(FailureKind)),
        end_reason=next(iter(EndReason)),
        pause={"state": "paused", "by": "api"},
        enable_recording=True,
        **common,
    )
    fresh = SessionRecord(id=SessionId("fresh"), status=SessionStatus.CREATED, created_at=now, updated_at=now, **common)
    return [busy, fresh]


def stored_rows() -> list[sqlite3.Row]:
    connection = sqlite3.connect(":memory:")
    connection.row_factory = sqlite3.Row
    for migration in sorted(MIGRATIONS.glob("*.sql")):
        connection.executescript(migration.read_text(encoding="utf-8"))
    columns = repo._COLUMNS
    insert = f"INSERT INTO sessions ({', '.join(columns)}) VALUES ({', '.join('?' for _ in columns)})"
    wanted = records()
    for record in wanted:
        connection.execute(insert, tuple(repo._to_column(name, getattr(record, name)) for name in columns))
    rows = connection.execute("SELECT * FROM sessions ORDER BY rowid").fetchall()
    for record, row in zip(wanted, rows, strict=True):
        if not (repo._from_row(dict(zip(row.keys(), row, strict=True))) == hand_from_row(row) == record):
            raise SystemExit(f"the mappings disagree on row {record.id}")
    return rows


def per_row(mapping: Callable[[Any], SessionRecord], rows: list[Any]) -> float:
    started = time.perf_counter()
    for _ in range(CALLS):
        for row in rows:
            mapping(row)
    return (time.perf_counter() - started) / (CALLS * len(rows))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--iterations", type=int, default=5)
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args()
    rows = stored_rows()
    hand: list[float] = []
    pydantic: list[float] = []
    for _ in range(args.iterations):
        hand.append(per_row(hand_from_row, rows))
        pydantic.append(per_row(repo._from_row, [dict(zip(row.keys(), row, strict=True)) for row in rows]))
    baseline, now = min(hand), min(pydantic)
    table = [
        ("hand mapping, dda951a (µs per row, best iteration)", f"{baseline * 1e6:.1f}"),
        ("pydantic TypeAdapter, now (µs per row, best iteration)", f"{now * 1e6:.1f}"),
        ("now / baseline", f"{now / baseline:.2f}"),
    ]
    if args.markdown:
        print("| measure | value |\n|---|---|")
        for name, value in table:
            print(f"| {name} | {value} |")
    else:
        for name, value in table:
            print(f"{name:58} {value}")


if __name__ == "__main__":
    main()
