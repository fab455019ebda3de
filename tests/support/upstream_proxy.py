"""A real upstream proxy on loopback for the proxy tests (spec §28.1): ``pproxy`` (PyPI), serving HTTP ``CONNECT``
and SOCKS5, both with username/password authentication, logging every connection it makes.

Its own log is the proof of the route: ``http 127.0.0.1:<client> -> <host>:<port>`` for each tunnel, and
``Unauthorized ...`` for each refused login. ``--auth 0`` makes it check the credentials on every connection (by
default it trusts an address for a month after one good login). pproxy's command line picks uvloop when it is
installed and then fails to start on Python 3.11, so it runs with uvloop hidden.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from tests.support.ports import free_port
from tests.support.waiting import wait_for

__all__ = ["UpstreamProxies", "dead_port", "upstream_proxies"]

_LAUNCH = "import sys; sys.modules['uvloop'] = None; sys.argv[0] = 'pproxy'; from pproxy.server import main; main()"


@dataclass(frozen=True)
class UpstreamProxies:
    """One pproxy process: ``http_port`` (CONNECT) and ``socks_port`` (SOCKS5), both wanting ``user:password``."""

    http_port: int
    socks_port: int
    user: str
    password: str
    log_path: Path

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def tunnels(self, scheme: str) -> list[str]:
        """Every destination ``host:port`` the proxy connected to for ``scheme`` (``http`` or ``socks5``)."""
        return re.findall(rf"^{scheme} 127\.0\.0\.1:\d+ -> (\S+)$", self.log(), flags=re.MULTILINE)

    def refused_logins(self) -> int:
        return self.log().count("Unauthorized")

    def url(self, scheme: str, *, password: str | None = None) -> str:
        port = self.http_port if scheme == "http" else self.socks_port
        return f"{scheme}://{self.user}:{password or self.password}@127.0.0.1:{port}"


def dead_port() -> int:
    """A loopback port nothing listens on (a connection to it is refused)."""
    return free_port()


@contextmanager
def upstream_proxies(directory: Path, user: str, password: str) -> Iterator[UpstreamProxies]:
    http_port, socks_port = free_port(), free_port()
    log_path = directory / "pproxy.log"
    auth = f"#{user}:{password}"
    argv = [
        sys.executable,
        "-c",
        _LAUNCH,
        "-l",
        f"http://127.0.0.1:{http_port}{auth}",
        "-l",
        f"socks5://127.0.0.1:{socks_port}{auth}",
        "--auth",
        "0",
        "-v",
    ]
    with log_path.open("ab") as log:
        process = subprocess.Popen(
            argv,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
    proxies = UpstreamProxies(http_port, socks_port, user, password, log_path)
    try:
        wait_for(lambda: proxies.log().count("Serving on") >= 2 or None, 30, interval=0.05, what="pproxy listening")
        yield proxies
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
