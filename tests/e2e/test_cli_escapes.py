"""A page's terminal escape sequences never reach the terminal of ``openbrowse`` (spec §25.4).

The attack rides in everything the CLI shows: the task (so the title and the first feed row), a page title the
agent reads, each step's card and the final answer. The real CLI runs as a subprocess against a real server.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator

import pytest

from tests.e2e.agent_support import agent_steps, token
from tests.e2e.servers import agent_env, running_server
from tests.fakes.llm_script import done, navigate
from tests.fakes.llm_server import FakeProvider
from tests.fakes.site import FixtureSites
from tests.support.server import ServerProcess

pytestmark = [pytest.mark.e2e, pytest.mark.display]

ATTACK = "\x1b]0;pwned\x07\x1b[2J"


@pytest.fixture(scope="module")
def cli_server(tmp_path_factory: pytest.TempPathFactory, fake: FakeProvider) -> Iterator[ServerProcess]:
    with running_server(tmp_path_factory.mktemp("cli-escapes-home"), agent_env(fake)) as process:
        yield process


def openbrowse(*args: str, url: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENBROWSE_")}
    env.update({"OPENBROWSE_URL": url, "COLUMNS": "200", "TERM": "xterm-256color"})
    return subprocess.run(
        [sys.executable, "-m", "openbrowse", *args], env=env, capture_output=True, text=True, timeout=180, check=False
    )


def assert_clean(result: subprocess.CompletedProcess[str]) -> None:
    for name, stream in (("stdout", result.stdout), ("stderr", result.stderr)):
        assert "pwned" not in stream and "\x07" not in stream and "[2J" not in stream, (name, stream)
        assert "\x1b]" not in stream, (name, stream)  # no OSC at all (Rich's own colour codes are CSI m only)


def test_escape_sequences_in_the_feed_and_the_output_are_not_printed(
    cli_server: ServerProcess, fake: FakeProvider, site: FixtureSites
) -> None:
    marker = token("ESC")
    fake.script(
        marker,
        [navigate(f"{site.url}/", next=f"Open the page{ATTACK}"), done(f"The answer{ATTACK} is 42.")],
        when=agent_steps,
    )
    run = openbrowse("run", f"{marker} Read the page{ATTACK} and answer", url=cli_server.base_url)
    assert run.returncode == 0, run.stderr
    assert run.stdout == "The answer is 42.\n"
    assert f"{marker} Read the page and answer" in run.stderr  # the feed row is shown, without the sequence
    assert_clean(run)
    session_id = run.stderr.split("Session ", 1)[1].split()[0]
    for args in (("sessions", "follow", session_id), ("sessions", "show", session_id), ("sessions", "ls")):
        result = openbrowse(*args, url=cli_server.base_url)
        assert result.returncode == 0, (args, result.stderr)
        assert_clean(result)
    as_json = openbrowse("sessions", "show", session_id, "--json", url=cli_server.base_url)
    assert "\x1b" not in as_json.stdout and "\x07" not in as_json.stdout
    assert json.loads(as_json.stdout)["output"] == f"The answer{ATTACK} is 42."  # the API's value, JSON-escaped
