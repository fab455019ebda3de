"""nginx from Debian in front of local servers, configured from the repository's own ``deploy/nginx.conf``.

The shipped file is a server-level configuration (``conf.d/default.conf`` in the nginx image); it is used as it is,
with its two upstream servers and its listen port pointed at this machine's loopback ports, inside a main
configuration that keeps every file nginx writes in a temporary directory.
"""

from __future__ import annotations

import shutil
import signal
import socket
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.support.server import free_port
from tests.support.waiting import wait_for

RECIPE = Path(__file__).resolve().parents[2] / "deploy" / "nginx.conf"
MISSING = "nginx is not installed (Debian's nginx-light; `make test` installs it)"


def nginx_binary() -> str | None:
    return shutil.which("nginx") or (str(Path("/usr/sbin/nginx")) if Path("/usr/sbin/nginx").exists() else None)


def recipe_for(backends: list[int], listen: int) -> str:
    """``deploy/nginx.conf`` with ``node1``/``node2`` on loopback ports ``backends`` and nginx on ``listen``."""
    text = RECIPE.read_text(encoding="utf-8")
    for index, port in enumerate(backends, start=1):
        name = f"server node{index}:8420"
        assert name in text, f"{RECIPE} no longer names {name}"
        text = text.replace(name, f"server 127.0.0.1:{port}")
    assert "listen 80;" in text, f"{RECIPE} no longer listens on port 80"
    return text.replace("listen 80;", f"listen 127.0.0.1:{listen};")


@contextmanager
def nginx_in_front(workdir: Path, backends: list[int]) -> Iterator[str]:
    """Serve the recipe in front of ``backends``; yield its base URL. Stopped (and reaped) on exit."""
    binary = nginx_binary()
    assert binary is not None, MISSING
    port = free_port()
    for temp in ("body", "proxy", "fastcgi", "uwsgi", "scgi"):
        (workdir / temp).mkdir(parents=True, exist_ok=True)
    conf = workdir / "nginx.conf"
    conf.write_text(
        f"""user root;
worker_processes 1;
daemon off;
pid {workdir}/nginx.pid;
error_log {workdir}/error.log info;
events {{ worker_connections 256; }}
http {{
    access_log {workdir}/access.log;
    client_body_temp_path {workdir}/body;
    proxy_temp_path {workdir}/proxy;
    fastcgi_temp_path {workdir}/fastcgi;
    uwsgi_temp_path {workdir}/uwsgi;
    scgi_temp_path {workdir}/scgi;
{recipe_for(backends, port)}
}}
""",
        encoding="utf-8",
    )
    process = subprocess.Popen(
        [binary, "-c", str(conf), "-p", str(workdir)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    try:
        wait_for(lambda: _answers(port) or process.poll() is not None, 30, what="nginx to listen")
        assert process.poll() is None, process.stderr.read().decode() if process.stderr else "nginx exited"
        yield f"http://127.0.0.1:{port}"
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGQUIT)  # graceful: workers finish what they serve
            try:
                process.wait(30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(10)
        if process.stderr is not None:
            process.stderr.close()


def _answers(port: int) -> bool:
    with socket.socket() as probe:
        probe.settimeout(1)
        return probe.connect_ex(("127.0.0.1", port)) == 0
