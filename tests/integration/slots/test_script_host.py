"""The script host as a real process (identity wrapper): namespace, limits, kills, the channel's validation.

The handler here is a fake at the wire (the server's real one, ``agent/code/script_calls.py``, has its own tests);
everything else is real: the child ``python -I -m openbrowse.scripthost``, its inherited channel socket and its
process group.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import psutil
import pytest

from openbrowse.domain.scripts import ScriptCallError, ScriptEnd, ScriptRun
from openbrowse.slots.script_host import KILL_GRACE, ScriptHost, host_environment, identity

from .conftest import free_port

SESSION = "sess_a"


def run(source: str, *, limit: float = 30.0, owner: str = SESSION, store: bool = False) -> ScriptRun:
    return ScriptRun(owner=owner, source=source, filename="scripts/test.py", target_id=None, limit=limit, store=store)


async def wait_gone(pid: int, within: float = 1.0) -> None:
    """The process is dead (gone, or a zombie waiting for its reap) within ``within`` seconds."""
    deadline = time.monotonic() + within
    while psutil.pid_exists(pid):
        try:
            if psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
                return
        except psutil.NoSuchProcess:
            return
        assert time.monotonic() < deadline, f"process {pid} still runs {within} s after the kill"
        await asyncio.sleep(0.01)


class Calls:
    """Serves ``clipboard.*`` like the server does and refuses everything else, recording what it was asked."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, dict[str, Any]]] = []
        self.values: dict[str, str] = {}

    async def __call__(self, method: str, args: dict[str, Any]) -> Any:
        self.seen.append((method, args))
        if method == "clipboard.remember":
            self.values[args["key"]] = args["value"]
            return f"Remembered {args['key']}."
        if method == "clipboard.recall":
            return self.values.get(args["key"], "nothing")
        if method == "slow":
            await asyncio.sleep(3600)
        raise ScriptCallError("ValueError", f"{method!r} is not a helper the server serves.")


def no_browser() -> str:
    return f"ws://127.0.0.1:{free_port()}/devtools/browser/none"


@pytest.fixture
async def host() -> AsyncIterator[ScriptHost]:
    host = ScriptHost("scripts-test", identity, host_environment(), no_browser)
    yield host
    await host.aclose()
    assert host.pid is None


async def test_the_namespace_persists_across_runs_with_top_level_await_and_captured_print(host: ScriptHost) -> None:
    calls = Calls()
    first = await host.run(run("import asyncio\nrows = [1, 2]\nawait asyncio.sleep(0.01)\nprint('rows', rows)"), calls)
    assert first.end is ScriptEnd.FINISHED and first.stdout == "rows [1, 2]\n" and not first.namespace_lost
    pid = host.pid
    second = await host.run(run("rows.append(3)\nprint(len(rows), remember('k', 'v'), recall('k'))"), calls)
    assert second.end is ScriptEnd.FINISHED, second.error
    assert second.stdout == "3 Remembered k. v\n"
    assert host.pid == pid, "one process keeps the namespace"
    nested = await host.run(run("async def main():\n    return sum(rows)\nprint(asyncio.run(main()))"), calls)
    assert nested.stdout == "6\n"


async def test_an_error_names_the_script_line_and_the_namespace_survives(host: ScriptHost) -> None:
    calls = Calls()
    await host.run(run("kept = 'yes'"), calls)
    failed = await host.run(run("x = 1\nraise ValueError('bad value')\n"), calls)
    assert failed.end is ScriptEnd.FAILED
    assert failed.error == "ValueError: bad value (line 2: raise ValueError('bad value'))"
    exited = await host.run(run("import sys\nsys.exit(3)"), calls)
    assert exited.end is ScriptEnd.FAILED and exited.error is not None and exited.error.startswith("SystemExit: 3")
    assert (await host.run(run("print(kept)"), calls)).stdout == "yes\n"


async def test_an_awaiting_script_is_stopped_at_its_limit_and_keeps_the_namespace(host: ScriptHost) -> None:
    calls = Calls()
    outcome = await host.run(run("value = 7\nprint('started')\nawait asyncio.sleep(60)", limit=0.5), calls)
    assert outcome.end is ScriptEnd.TIMED_OUT and outcome.stdout == "started\n"
    again = await host.run(run("print(value)"), calls)
    assert again.stdout == "7\n" and not again.namespace_lost


async def test_a_spinning_script_is_killed_at_the_limit_and_the_next_run_says_its_namespace_is_gone(
    host: ScriptHost,
) -> None:
    calls = Calls()
    await host.run(run("precious = 1"), calls)
    pid = host.pid
    assert pid is not None
    started = time.monotonic()
    outcome = await host.run(run("print('spinning')\nwhile True:\n    pass", limit=1.0), calls)
    took = time.monotonic() - started
    assert outcome.end is ScriptEnd.KILLED
    assert outcome.stdout == "spinning\n", "what it printed before spinning still arrives"
    assert took > 1.0 + KILL_GRACE - 0.1  # not before its limit (a run never killed would hang the test)
    await wait_gone(pid)
    after = await host.run(run("print('precious' in globals())"), calls)
    assert after.end is ScriptEnd.FINISHED and after.stdout == "False\n"
    assert after.namespace_lost is True
    assert host.pid not in (None, pid)
    later = await host.run(run("print(1)"), calls)
    assert later.namespace_lost is False, "only the first run after the kill says so"


async def test_a_memory_hungry_script_is_killed_at_once_when_its_run_is_cancelled(host: ScriptHost) -> None:
    calls = Calls()
    await host.run(run("print('warm')"), calls)
    pid = host.pid
    assert pid is not None
    hog = "blocks = []\nwhile True:\n    blocks.append(bytearray(32 * 1024 * 1024))\n"
    hog += "    if len(blocks) > 24:\n        del blocks[0]\n"
    # a limit past the test's timeout: a cancel that waited for the script would hang the test
    task = asyncio.ensure_future(host.run(run(hog, limit=3600), calls))
    process = psutil.Process(pid)
    deadline = time.monotonic() + 30
    while process.memory_info().rss < 400 * 1024 * 1024:
        assert time.monotonic() < deadline, "the script never grew"
        await asyncio.sleep(0.05)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await wait_gone(pid)
    fresh = await host.run(run("print('blocks' in globals())"), calls)
    assert fresh.stdout == "False\n" and fresh.namespace_lost


async def test_a_host_that_dies_under_its_script_is_reported_and_replaced(host: ScriptHost) -> None:
    calls = Calls()
    outcome = await host.run(run("import os\nprint('bye', flush=True)\nos._exit(9)"), calls)
    assert outcome.end is ScriptEnd.CRASHED
    assert outcome.error is not None and "exit code 9" in outcome.error
    after = await host.run(run("print('back')"), calls)
    assert after.stdout == "back\n" and after.namespace_lost


async def test_bad_calls_get_error_replies_and_never_break_the_channel(host: ScriptHost) -> None:
    """The script plays the attacker: it finds the channel object and sends what no helper would."""
    calls = Calls()
    attack = """
import gc
from openbrowse.scripthost.channel import Channel, _Waiter
from openbrowse.scripthost.wire import MAX_LINE
channel = next(o for o in gc.get_objects() if isinstance(o, Channel))
for method, args in [("shell.run", {"cmd": "id"}), ("clipboard.recall", {"key": 5}), ("files.read", "not-a-dict")]:
    try:
        channel.call_sync(method, args)
    except Exception as refused:
        print(type(refused).__name__, str(refused)[:80])
waiter = _Waiter()
channel._waiting[77] = waiter
with channel._write_lock:  # the output the host sends meanwhile must not land inside this line
    channel._sock.sendall(b'{"type":"call","id":77,"method":"x","args":{"pad":"' + b"a" * (MAX_LINE + 10) + b'"}}\\n')
waiter.event.wait(20)
print("oversized:", waiter.reply["ok"], waiter.reply["error"][:40])
with channel._write_lock:
    channel._sock.sendall(b'not json at all\\n{"type":"done","id":999,"stdout":"x"}\\n')
print(recall("k"))
"""
    outcome = await host.run(run(attack), calls)
    assert outcome.end is ScriptEnd.FINISHED, outcome.error
    lines = outcome.stdout.splitlines()
    assert lines[0] == "ValueError 'shell.run' is not a helper the server serves."
    # the recall with a number for a key reached the handler (argument types are its to check) and did not raise
    assert lines[1] == "ValueError malformed message (call.args: Input should be an object)"
    assert lines[2].startswith("oversized: False the message is too large (5033"), lines[2]
    assert lines[3] == "nothing", "the channel still serves calls"
    assert [m for m, _ in calls.seen] == ["shell.run", "clipboard.recall", "clipboard.recall"]
    assert (await host.run(run("print('still here')"), calls)).stdout == "still here\n"


async def test_another_sessions_run_starts_from_an_empty_namespace(host: ScriptHost) -> None:
    calls = Calls()
    await host.run(run("secret = 'of session a'"), calls)
    first_pid = host.pid
    other = await host.run(run("print('secret' in globals())", owner="sess_b"), calls)
    assert other.stdout == "False\n" and not other.namespace_lost
    assert host.pid != first_pid


async def test_the_host_gets_none_of_the_servers_environment(host: ScriptHost, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-fake-secret-for-the-test")
    monkeypatch.setenv("API_KEY", "fake-service-key")
    outcome = await host.run(run("import os\nprint(sorted(os.environ))"), Calls())
    assert outcome.end is ScriptEnd.FINISHED
    assert host.pid is not None
    environ = Path(f"/proc/{host.pid}/environ").read_bytes()
    assert b"sk-ant-fake-secret-for-the-test" not in environ and b"fake-service-key" not in environ
    assert b"ANTHROPIC" not in environ
    assert "ANTHROPIC_API_KEY" not in outcome.stdout and "OPENBROWSE_SCRIPTHOST_TOKEN" not in outcome.stdout


async def test_killing_and_closing_end_the_process_and_a_closed_host_runs_nothing(host: ScriptHost) -> None:
    calls = Calls()
    task = asyncio.ensure_future(host.run(run("await asyncio.sleep(60)"), calls))
    while host.pid is None:
        await asyncio.sleep(0.01)
    pid = host.pid
    await asyncio.sleep(0.2)
    await host.kill()
    outcome = await task
    assert outcome.end is ScriptEnd.CRASHED and outcome.error is not None and "stopped" in outcome.error
    await wait_gone(pid, 0.0 + 0.5)
    assert (await host.run(run("print(2)"), calls)).stdout == "2\n"
    await host.aclose()
    closed = await host.run(run("print(3)"), calls)
    assert closed.end is ScriptEnd.UNAVAILABLE


async def test_a_helper_call_left_running_is_cancelled_when_the_run_ends(host: ScriptHost) -> None:
    calls = Calls()
    script = "from openbrowse.scripthost.helpers import served_helpers\nimport gc\n"
    script += "from openbrowse.scripthost.channel import Channel\n"
    script += "channel = next(o for o in gc.get_objects() if isinstance(o, Channel))\n"
    script += "pending = asyncio.ensure_future(channel.call('slow', {}))\nawait asyncio.sleep(0.2)\nprint('done')"
    outcome = await host.run(run(script), calls)  # the helper sleeps an hour: waiting for it would hang the test
    assert outcome.stdout == "done\n"
    assert ("slow", {}) in calls.seen
