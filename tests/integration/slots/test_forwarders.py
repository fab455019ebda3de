"""The host-side relays of a sandboxed slot live outside its namespaces: they must still end with the server."""

from __future__ import annotations

import subprocess
import sys
import time

import psutil

from tests.support.server import free_port

SPAWN_THEN_DIE = """
import asyncio, os, signal, sys
from pathlib import Path
from openbrowse.slots.forwarders import host_relay

async def main() -> None:
    relay = host_relay("CDP", int(sys.argv[1]), Path("/nonexistent/cdp.sock")).process({"PATH": "/usr/bin:/bin"})
    relay.start()
    print(relay.pid, flush=True)
    sys.stdin.readline()
    os.kill(os.getpid(), signal.SIGKILL)

asyncio.run(main())
"""


def _listening(port: int) -> bool:
    # Not a connect probe: connecting to a free port of the ephemeral range can connect the socket to itself (the
    # kernel may pick that very port as its source), which read as "still listening" once in a while.
    return any(
        c.status == psutil.CONN_LISTEN and c.laddr and c.laddr.port == port for c in psutil.net_connections("tcp")
    )


def test_a_host_relay_ends_when_its_server_is_killed() -> None:
    """A SIGKILLed server used to leave its socat forwarders behind, holding the slot's ports for everyone."""
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-c", SPAWN_THEN_DIE, str(port)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert server.stdout is not None and server.stdin is not None
    relay = psutil.Process(int(server.stdout.readline()))
    deadline = time.monotonic() + 10
    while not _listening(port):
        assert time.monotonic() < deadline, "the relay never listened"
        time.sleep(0.05)
    server.stdin.write("die\n")
    server.stdin.flush()
    assert server.wait(10) == -9
    deadline = time.monotonic() + 10
    while relay.is_running() and relay.status() != psutil.STATUS_ZOMBIE:
        assert time.monotonic() < deadline, "the relay outlived its server"
        time.sleep(0.05)
    assert not _listening(port)
