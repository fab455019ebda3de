"""``openbrowse run / sessions / browsers`` as a user runs them: a subprocess talking HTTP to a real server."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import StartServer
from tests.e2e.agent_support import agent_steps, create, token, wait_until_status
from tests.e2e.servers import agent_env, running_server
from tests.fakes.llm_script import done, navigate
from tests.fakes.llm_server import FakeProvider
from tests.fakes.site import FixtureSites
from tests.support import loopback
from tests.support.ports import free_port
from tests.support.server import ServerProcess

pytestmark = [pytest.mark.e2e, pytest.mark.display]


@pytest.fixture(scope="module")
def cli_server(tmp_path_factory: pytest.TempPathFactory, fake: FakeProvider) -> Iterator[ServerProcess]:
    with running_server(tmp_path_factory.mktemp("cli-home"), agent_env(fake), slots=2) as process:
        yield process


def openbrowse(
    *args: str, url: str, timeout: float = 180, extra_env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENBROWSE_")}
    env.update({"OPENBROWSE_URL": url, "COLUMNS": "200", "NO_COLOR": "1", **(extra_env or {})})
    return subprocess.run(
        [sys.executable, "-m", "openbrowse", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def test_run_streams_the_feed_and_prints_the_answer(
    cli_server: ServerProcess, fake: FakeProvider, site: FixtureSites
) -> None:
    marker = token("CLI")
    fake.script(marker, [navigate(f"{site.url}/"), done("The shop sells widgets.")], when=agent_steps)
    result = openbrowse("run", f"{marker} What does {site.url}/ sell?", url=cli_server.base_url)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "The shop sells widgets.\n"
    assert f"{marker} What does" in result.stderr  # the user message, streamed from the feed
    assert "Session started with model" in result.stderr
    assert "[1] " in result.stderr and "[2] " in result.stderr  # both steps
    assert "Task succeeded · stopped · 2 steps" in result.stderr


def test_run_with_a_schema_prints_json(
    cli_server: ServerProcess, fake: FakeProvider, site: FixtureSites, tmp_path: Path
) -> None:
    marker = token("CLIJSON")
    answer = {"products": [{"name": "Blue Widget", "price": "9.99"}]}
    fake.script(marker, [done(json.dumps(answer))], when=agent_steps)
    schema = tmp_path / "schema.json"
    schema.write_text(
        json.dumps(
            {
                "type": "object",
                "properties": {"products": {"type": "array", "items": {"type": "object"}}},
                "required": ["products"],
            }
        )
    )
    result = openbrowse(
        "run", f"{marker} List the products on {site.url}/", "--schema", str(schema), url=cli_server.base_url
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == answer


def test_a_failed_task_exits_1_and_follow_replays_it(cli_server: ServerProcess, fake: FakeProvider) -> None:
    marker = token("CLIFAIL")
    fake.script(marker, [done("I could not find it.", success=False)], when=agent_steps)
    result = openbrowse("run", f"{marker} Find the unfindable.", url=cli_server.base_url)
    assert result.returncode == 1, result.stderr
    assert "Task did not succeed" in result.stderr
    assert result.stdout == "I could not find it.\n"
    session_id = result.stderr.split("Session ", 1)[1].split()[0]
    replay = openbrowse("sessions", "follow", session_id, url=cli_server.base_url)
    assert replay.returncode == 1
    assert f"{marker} Find the unfindable." in replay.stderr and replay.stdout == "I could not find it.\n"


def test_usage_and_connection_errors_exit_2(cli_server: ServerProcess, tmp_path: Path) -> None:
    missing_task = openbrowse("run", url=cli_server.base_url)
    assert missing_task.returncode == 2 and "Missing argument 'TASK'" in missing_task.stderr
    bad_schema = tmp_path / "bad.json"
    bad_schema.write_text("{not json")
    schema = openbrowse("run", "x", "--schema", str(bad_schema), url=cli_server.base_url)
    assert schema.returncode == 2 and "is not JSON" in schema.stderr
    model = openbrowse("run", "x", "--model", "no-such-model", url=cli_server.base_url)
    assert model.returncode == 2 and "'no-such-model' is not a valid model." in model.stderr
    unreachable = openbrowse("sessions", "ls", url=f"http://127.0.0.1:{free_port()}")
    assert unreachable.returncode == 2 and "cannot reach the OpenBrowse server" in unreachable.stderr
    unknown = openbrowse("sessions", "show", "no-such-session", url=cli_server.base_url)
    assert unknown.returncode == 2 and "404: Session not found" in unknown.stderr


def test_sessions_ls_show_stop_rm(cli_server: ServerProcess) -> None:
    shell = create(cli_server)
    sid = shell["id"]
    listing = openbrowse("sessions", "ls", url=cli_server.base_url)
    assert listing.returncode == 0, listing.stderr
    assert sid in listing.stdout and "created" in listing.stdout
    as_json = json.loads(openbrowse("sessions", "ls", "--json", url=cli_server.base_url).stdout)
    assert sid in [s["id"] for s in as_json["sessions"]]
    shown = openbrowse("sessions", "show", sid, url=cli_server.base_url)
    assert shown.returncode == 0 and sid in shown.stdout and "created" in shown.stdout
    stopped = openbrowse("sessions", "stop", sid, url=cli_server.base_url)
    assert stopped.returncode == 0 and stopped.stdout == f"{sid} stopped\n"
    assert wait_until_status(cli_server, sid, {"stopped"})["status"] == "stopped"
    removed = openbrowse("sessions", "rm", sid, url=cli_server.base_url)
    assert removed.returncode == 0 and removed.stdout == f"{sid} deleted\n"
    assert loopback.get(f"{cli_server.v3}/sessions/{sid}", timeout=30).status_code == 404


def test_browsers_ls(cli_server: ServerProcess) -> None:
    created = loopback.post(f"{cli_server.v3}/browsers", json={}, timeout=120)
    assert created.status_code in {200, 201}, created.text
    browser_id = created.json()["id"]
    try:
        listing = openbrowse("browsers", "ls", url=cli_server.base_url)
        assert listing.returncode == 0, listing.stderr
        assert browser_id in listing.stdout and "active" in listing.stdout
        as_json = json.loads(openbrowse("browsers", "ls", "--json", url=cli_server.base_url).stdout)
        assert [b["id"] for b in as_json["items"]] == [browser_id]
    finally:
        loopback.patch(f"{cli_server.v3}/browsers/{browser_id}", json={"action": "stop"}, timeout=60)


def test_api_key_from_option_or_environment(start_server: StartServer) -> None:
    server = start_server(API_KEY="cli-key")
    refused = openbrowse("sessions", "ls", url=server.base_url)
    assert refused.returncode == 2 and "401: Invalid API key" in refused.stderr
    by_option = openbrowse("sessions", "ls", "--api-key", "cli-key", url=server.base_url)
    assert by_option.returncode == 0, by_option.stderr
    by_env = openbrowse("browsers", "ls", url=server.base_url, extra_env={"OPENBROWSE_API_KEY": "cli-key"})
    assert by_env.returncode == 0 and "Browsers (0 in all)" in by_env.stdout


def test_keep_alive_follow_up_with_session_streams_only_the_new_turn(
    cli_server: ServerProcess, fake: FakeProvider, site: FixtureSites
) -> None:
    marker = token("CLIKEEP")
    fake.script(marker, [done("First answer."), done("Second answer.")], when=agent_steps)
    started = openbrowse("run", f"{marker} First question.", "--keep-alive", "--no-follow", url=cli_server.base_url)
    assert started.returncode == 0, started.stderr
    sid = started.stdout.strip()
    assert wait_until_status(cli_server, sid, {"idle", "error"})["status"] == "idle"
    second = openbrowse("run", "Second question.", "--session", sid, url=cli_server.base_url)
    assert second.returncode == 0, second.stderr
    assert second.stdout == "Second answer.\n"
    assert "Second question." in second.stderr and "First question." not in second.stderr
    assert "Task succeeded · idle" in second.stderr
    assert openbrowse("sessions", "stop", sid, url=cli_server.base_url).stdout == f"{sid} stopped\n"
