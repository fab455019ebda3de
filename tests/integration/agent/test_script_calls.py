"""A real script host served by the server's real handler (``agent/code/script_calls.py``): the session's file area,
its answer store and its clipboard, each reachable only through validated calls."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from openbrowse.agent.code.script_calls import ScriptCalls
from openbrowse.agent.structured.answer_store import AnswerStore
from openbrowse.agent.structured.evidence import EvidenceCorpus
from openbrowse.agent.structured.schema_model import convert
from openbrowse.agent.tools.clipboard import Clipboard
from openbrowse.agent.tools.context import ToolContext
from openbrowse.domain.feed import FeedEntry
from openbrowse.domain.ids import SessionId
from openbrowse.domain.scripts import ScriptEnd, ScriptOutcome, ScriptRun
from openbrowse.network.policy import NetworkRules
from openbrowse.slots.script_host import ScriptHost, host_environment, identity

SESSION = SessionId("sess_scriptcalls")
SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "products": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"name": {"type": "string"}, "price": {"type": "number"}},
                "required": ["name", "price"],
            },
        }
    },
    "required": ["products"],
}


class NoFeed:
    async def append(self, session_id: SessionId, entry: FeedEntry) -> Any:
        raise AssertionError("the helper calls write no feed rows")


@pytest.fixture
async def host() -> AsyncIterator[ScriptHost]:
    host = ScriptHost("scripts-calls", identity, host_environment(), lambda: "ws://127.0.0.1:9/devtools/browser/none")
    yield host
    await host.aclose()


def context(files: Path, *, store: bool = False) -> ToolContext:
    files.mkdir(parents=True, exist_ok=True)
    answer = AnswerStore(convert(SCHEMA), EvidenceCorpus(files), files) if store else None
    return ToolContext(SESSION, files, Clipboard(), NoFeed(), network=NetworkRules(), store=answer)


async def run(host: ScriptHost, ctx: ToolContext, source: str) -> ScriptOutcome:
    request = ScriptRun(SESSION, source, "scripts/t.py", None, 30.0, store=ctx.store is not None)
    return await host.run(request, ScriptCalls(ctx, browser=None))  # type: ignore[arg-type]


async def test_files_stay_inside_the_session_file_area(host: ScriptHost, tmp_path: Path) -> None:
    files = tmp_path / "sessions" / SESSION
    ctx = context(files)
    (tmp_path / "sessions" / "sess_other").mkdir()
    (tmp_path / "sessions" / "sess_other" / "secret.txt").write_text("other session's data")
    (tmp_path / ".env").write_text("ANTHROPIC_API_KEY=sk-real")
    script = """
save_json("rows.json", {"a": [1, 2]})
with open("notes/log.txt", "w") as f:
    f.write("one\\n")
with open("notes/log.txt", "a") as f:
    f.write("two\\n")
print(read_json("rows.json")["a"], open("notes/log.txt").read().split())
with open("blob.bin", "wb") as f:
    f.write(bytes(range(256)))
print(len(open("blob.bin", "rb").read()))
for name in ["../sess_other/secret.txt", "../../.env", "/etc/passwd", "notes/../../x.txt"]:
    try:
        open(name).read()
    except PermissionError as refused:
        print("refused:", refused)
try:
    open("../escape.txt", "w")
except PermissionError as refused:
    print("refused write:", refused)
try:
    open("missing.txt")
except FileNotFoundError as missing:
    print("missing:", missing)
"""
    outcome = await run(host, ctx, script)
    assert outcome.end is ScriptEnd.FINISHED, outcome.error
    lines = outcome.stdout.splitlines()
    assert lines[0] == "[1, 2] ['one', 'two']" and lines[1] == "256"
    assert lines[2:6] == [
        "refused: ../sess_other/secret.txt is outside the session's file area",
        "refused: ../../.env is outside the session's file area",
        "refused: /etc/passwd is outside the session's file area",
        "refused: notes/../../x.txt is outside the session's file area",
    ]
    assert lines[6] == "refused write: ../escape.txt is outside the session's file area"
    assert lines[7] == "missing: No such file in the session's file area: missing.txt"
    assert json.loads((files / "rows.json").read_text()) == {"a": [1, 2]}
    assert (files / "notes" / "log.txt").read_text() == "one\ntwo\n"
    assert not (tmp_path / "sessions" / "escape.txt").exists()


async def test_the_store_round_trips_with_its_own_validation(host: ScriptHost, tmp_path: Path) -> None:
    ctx = context(tmp_path / "files", store=True)
    script = """
print(add_item({"name": "Blue Widget", "price": 42}).splitlines()[0])
print(update_items([{"index": 0, "fields": {"price": 41.5}}]).splitlines()[0])
try:
    add_item({"name": "Bad", "price": "not a number"})
except Exception as refused:
    print("refused:", type(refused).__name__)
try:
    update_item("zero", {"price": 1})
except TypeError as wrong:
    print("wrong:", wrong)
print(json.loads(read_output().splitlines()[0])["products"])
"""
    outcome = await run(host, ctx, script)
    assert outcome.end is ScriptEnd.FINISHED, outcome.error
    lines = outcome.stdout.splitlines()
    assert lines[0].startswith("Added item #0. Coverage") and lines[1].startswith("Updated 1 item(s).")
    assert lines[2] == "refused: StoreError"
    assert lines[3].startswith("wrong: store.update_item: index: Input should be a valid integer")
    assert lines[4] == "[{'index': 0, 'name': 'Blue Widget', 'price': 41.5}]"
    assert ctx.store is not None and ctx.store.items == [{"name": "Blue Widget", "price": 41.5}]


async def test_without_a_store_its_helpers_do_not_exist_and_the_clipboard_is_the_sessions(
    host: ScriptHost, tmp_path: Path
) -> None:
    ctx = context(tmp_path / "files")
    ctx.clipboard.seed("goal", "Find the widget")
    script = "print('add_item' in globals(), recall('goal'), remember('_internal', 'x'), remember('k', 'v'))"
    outcome = await run(host, ctx, script)
    assert outcome.stdout == (
        "False Find the widget '_internal' is an internal key and cannot be overwritten. Remembered k.\n"
    )
    assert ctx.clipboard.get("k") == "v"


async def test_fetch_applies_the_network_policy(host: ScriptHost, tmp_path: Path) -> None:
    ctx = context(tmp_path / "files")
    script = """
try:
    await fetch("http://169.254.169.254/latest/meta-data/")
except PermissionError as refused:
    print("refused:", refused)
try:
    await fetch("http://example.com/", method="GET; rm -rf")
except TypeError as wrong:
    print("wrong:", str(wrong)[:40])
"""
    outcome = await run(host, ctx, script)
    assert outcome.end is ScriptEnd.FINISHED, outcome.error
    lines = outcome.stdout.splitlines()
    assert lines[0].startswith("refused: Refused by the network policy: 169.254.169.254"), lines[0]
    assert lines[1].startswith("wrong: fetch: method: String should match pat")


async def test_a_script_cannot_write_past_the_file_areas_cap(host: ScriptHost, tmp_path: Path) -> None:
    files = tmp_path / "sessions" / SESSION
    ctx = replace(context(files), file_area_mb=3)
    script = """
written = 0
for n in range(8):
    try:
        with open(f"chunk-{n}.bin", "wb") as f:
            f.write(b"x" * (1 << 20))
        written += 1
    except OSError as full:
        print("refused:", full)
        break
print("written", written)
"""
    outcome = await run(host, ctx, script)
    assert outcome.end is ScriptEnd.FINISHED, outcome.error
    assert "capped at 3 MiB" in outcome.stdout
    assert "written 3" in outcome.stdout
    assert sum(path.stat().st_size for path in files.rglob("*") if path.is_file()) <= 3 * 1024 * 1024
