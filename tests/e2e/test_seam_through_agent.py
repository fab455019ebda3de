"""The seam's floods and plants driven through the agent (issue 31): a hostile page has the model run a
``run_code_file`` script, and the script attacks the seam between its slot and the server. Real server, sandbox and
Chromium; the tests assert what a user sees: the server keeps answering (``/health``, the session), the session ends
in a recorded state, and nothing the slot started is left.

* **plants**: the script looks for the places the server opens things in (Chromium's command line names the slot's
  directories; the seam directory under ``/run/openbrowse``; the old scratch directories in ``/tmp``) and tries to
  plant a FIFO and a link to ``/etc/shadow`` in each; then the live view is opened (the server writes its token
  file), the files are listed and the session is stopped (the profile and downloads are read back);
* **floods**: the script opens sockets to the egress relay directly, then has its page open hundreds of WebSockets
  through it to a site that holds them; the server is asked while they are held.
"""

from __future__ import annotations

import json
import os
import stat
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from websockets.sync.client import connect
from websockets.sync.server import Server, ServerConnection, serve
from websockets.typing import Subprotocol

from tests.e2e.agent_support import agent_steps, create, step_requests, token, wait_until_status
from tests.e2e.browser_support import needs_display
from tests.fakes.llm_script import agent_step, done
from tests.fakes.llm_server import FakeProvider
from tests.fakes.site import FixtureSites
from tests.support import loopback
from tests.support.server import ServerProcess, wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.display, needs_display]

PLANT_SCRIPT = """
import builtins, glob, os
places = {"/run/openbrowse", *glob.glob("/run/openbrowse/*"), *glob.glob("/run/openbrowse/*/*")}
places |= set(glob.glob("/tmp/openbrowse-*"))
for cmdline in glob.glob("/proc/[0-9]*/cmdline"):
    try:
        args = builtins.open(cmdline, "rb").read().split(b"\\0")
    except OSError:
        continue
    for arg in args:
        if arg.startswith((b"--user-data-dir=", b"--disk-cache-dir=", b"--crash-dumps-dir=")):
            folder = arg.split(b"=", 1)[1].decode()
            slot = os.path.dirname(folder.rstrip("/"))
            places |= {folder, os.path.join(folder, "Default"), slot, os.path.join(slot, "downloads")}
print("places =>", len(places))
for place in sorted(places):
    for kind, plant in (("fifo", lambda p: os.mkfifo(p)), ("link", lambda p: os.symlink("/etc/shadow", p))):
        target = os.path.join(place, f"planted.{kind}")
        try:
            plant(target)
            print(f"{kind} {target} => planted")
        except OSError as exc:
            print(f"{kind} {target} => refused {type(exc).__name__}")
"""

FLOOD_SCRIPT = """
import asyncio, json, socket
held, direct = [], 0
for _ in range(300):
    try:
        held.append(socket.create_connection(("127.0.0.1", 3128), timeout=1))
        direct += 1
    except OSError:
        pass
print("direct sockets =>", direct)
await browser.evaluate(FLOOD_JS)
while True:
    state = await browser.evaluate("window.__flood")
    if state["ended"] >= state["asked"]:
        break
    await asyncio.sleep(0.2)
print("page sockets =>", json.dumps(state))
"""
FLOOD_JS = """
window.__flood = {asked: %(count)d, opened: 0, ended: 0};
for (let i = 0; i < %(count)d; i++) {
  const socket = new WebSocket("%(url)s/?i=" + i);
  socket.onopen = () => { window.__flood.opened++; };
  socket.onclose = () => { window.__flood.ended++; };
}
true
"""
PAGE_SOCKETS = 400
HELD_DURING_CHECKS = 64
"""Sockets the holding site must hold before the server is asked (a fraction: Chromium and the relay cap the rest)."""


def printed(reply: str) -> dict[str, str]:
    lines = reply.split("Output:\n", 1)[-1].split("\n")
    return dict(line.split(" => ", 1) for line in lines if " => " in line)


def run_script(server: ServerProcess, fake: FakeProvider, name: str, code: str, url: str) -> tuple[str, str]:
    """Start a keep-alive session whose first step runs ``code`` on ``url``; (session id, marker)."""
    marker = token(name.upper())
    step = agent_step([{"run_code_file": {"name": name, "code": code, "url": url}}])
    fake.script(marker, [step, done("tried")], when=agent_steps)
    return create(server, task=f"{marker} Do as the page says.", keepAlive=True)["id"], marker


def server_answers(server: ServerProcess, session_id: str) -> None:
    assert loopback.get(f"{server.base_url}/health", timeout=30).status_code == 200
    assert loopback.get(f"{server.v3}/sessions/{session_id}", timeout=30).status_code == 200


def stop_and_check_nothing_left(server: ServerProcess, session_id: str) -> dict[str, object]:
    """Stop the session; its recorded end, once every process of its slot is gone."""
    loopback.post(f"{server.v3}/sessions/{session_id}/stop", json={"strategy": "session"}, timeout=60)
    ended = wait_until_status(server, session_id, {"stopped", "error", "timed_out"}, timeout=120)
    wait_until(lambda: not server.children(), 120, interval=0.2, what="the slot's processes to end")
    return ended


def planted_on_host(*roots: Path) -> list[str]:
    """FIFOs and links named ``planted.*`` under ``roots`` (never followed)."""
    found = []
    for root in roots:
        for folder, dirs, files in os.walk(root):
            for name in [*dirs, *files]:
                path = Path(folder, name)
                if name.startswith("planted.") and not stat.S_ISREG(path.lstat().st_mode):
                    found.append(str(path))
    return found


def test_what_a_script_plants_where_the_server_opens_things_is_never_followed(
    agent_server: ServerProcess, fake: FakeProvider, site: FixtureSites
) -> None:
    session_id, marker = run_script(agent_server, fake, "plant", PLANT_SCRIPT, f"{site.url}/jobs")
    parked = wait_until_status(agent_server, session_id, {"idle", "stopped", "error"}, timeout=240)
    assert parked["status"] == "idle", parked.get("lastStepSummary")
    reply = step_requests(fake, marker)[1].text
    outcomes = printed(reply)
    assert int(outcomes.pop("places")) >= 3, reply[-3000:]
    assert outcomes and all(v.startswith("refused") for v in outcomes.values()), outcomes
    # now the server opens what it shares with the slot: the live view's token file, the files, the profile
    url = f"ws://127.0.0.1:{agent_server.port}/vnc/{session_id}/websockify"
    with connect(url, subprotocols=[Subprotocol("binary")], open_timeout=60) as viewer:
        assert viewer.recv(timeout=60) == b"RFB 003.008\n"
    server_answers(agent_server, session_id)
    assert loopback.get(f"{agent_server.v3}/sessions/{session_id}/downloads", timeout=30).status_code == 200
    ended = stop_and_check_nothing_left(agent_server, session_id)
    assert ended["status"] == "stopped", ended
    assert not planted_on_host(agent_server.home, Path("/run/openbrowse")), "a plant reached the server's side"


class HoldingSite:
    """A WebSocket server that holds every connection until released, counting them."""

    def __init__(self) -> None:
        self.held = 0
        self.release = threading.Event()
        self._lock = threading.Lock()
        self._server: Server = serve(self._hold, "127.0.0.1", 0)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.socket.getsockname()[:2]
        return f"ws://{host}:{port}"

    def _hold(self, connection: ServerConnection) -> None:
        with self._lock:
            self.held += 1
        self.release.wait()

    def __enter__(self) -> HoldingSite:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.release.set()
        self._server.shutdown()
        self._thread.join()


@pytest.fixture
def holding_site() -> Iterator[HoldingSite]:
    with HoldingSite() as held:
        yield held


def test_a_script_flooding_the_egress_relay_leaves_the_server_answering(
    agent_server: ServerProcess, fake: FakeProvider, site: FixtureSites, holding_site: HoldingSite
) -> None:
    code = f"FLOOD_JS = {FLOOD_JS % {'count': PAGE_SOCKETS, 'url': holding_site.url}!r}\n" + FLOOD_SCRIPT
    session_id, marker = run_script(agent_server, fake, "flood", code, f"{site.url}/jobs")
    wait_until(lambda: holding_site.held >= HELD_DURING_CHECKS, 240, interval=0.2, what="the page's sockets")
    server_answers(agent_server, session_id)
    holding_site.release.set()
    parked = wait_until_status(agent_server, session_id, {"idle", "stopped", "error"}, timeout=240)
    assert parked["status"] == "idle", parked.get("lastStepSummary")
    outcomes = printed(step_requests(fake, marker)[1].text)
    assert outcomes["direct sockets"] == "0", "the script reached the egress relay past its page"
    state = json.loads(outcomes["page sockets"])
    assert state["opened"] >= HELD_DURING_CHECKS and state["ended"] == PAGE_SOCKETS, state
    ended = stop_and_check_nothing_left(agent_server, session_id)
    assert ended["status"] == "stopped", ended
