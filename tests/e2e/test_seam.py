"""The seam between the server and a slot, attacked through the agent (issue 31): what a prompt-injected
``run_code_file`` script leaves behind in its slot must not reach the server."""

from __future__ import annotations

import pytest
import websockets
from websockets.typing import Subprotocol

from tests.e2e.agent_support import agent_steps, create, messages, token, wait_until_status
from tests.e2e.browser_support import needs_display
from tests.fakes.llm_script import agent_step, done
from tests.fakes.llm_server import FakeProvider
from tests.support import loopback
from tests.support.server import ServerProcess

pytestmark = [pytest.mark.e2e, pytest.mark.display, needs_display]

PLANT_FIFO = """
import glob, os
scratch = sorted(glob.glob('/tmp/openbrowse-*-[0-9]*'))[0]
os.mkfifo(scratch + '/' + scratch.rsplit('-', 1)[1] + '.tokens')
print('planted in', scratch)
"""


async def test_a_fifo_a_script_planted_for_the_token_file_does_not_freeze_the_server(
    agent_server: ServerProcess, fake: FakeProvider
) -> None:
    """A FIFO where the live view's token file used to go blocked the event loop (``/health`` stopped answering) as
    soon as someone opened the live view."""
    marker = token("FIFO")
    fake.script(
        marker, [agent_step([{"run_code_file": {"name": "plant", "code": PLANT_FIFO}}]), done("done")], when=agent_steps
    )
    session = create(agent_server, task=f"{marker} Plant it.", keepAlive=True)
    sid = session["id"]
    parked = wait_until_status(agent_server, sid, {"idle", "error", "stopped"})
    assert parked["status"] == "idle", parked
    assert any("planted in" in str(m) for m in messages(agent_server, sid)), "the script did not run"

    url = f"ws://127.0.0.1:{agent_server.port}/vnc/{sid}/websockify"
    async with websockets.connect(url, subprotocols=[Subprotocol("binary")], open_timeout=60) as ws:
        assert await ws.recv() == b"RFB 003.008\n"
    assert loopback.get(f"{agent_server.base_url}/health", timeout=10).status_code == 200
