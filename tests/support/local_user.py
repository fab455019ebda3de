"""Another local user (``nobody``) asking a loopback port: what a stranger on the host would get."""

from __future__ import annotations

import subprocess

__all__ = ["ask_as_nobody"]

ASK = """
import socket, sys
data = b""
try:
    with socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=10) as s:
        s.sendall(sys.argv[2].encode() + b" HTTP/1.1\\r\\nHost: 127.0.0.1\\r\\nConnection: close\\r\\n\\r\\n")
        while chunk := s.recv(65536):  # Chromium keeps the connection open after its answer: the timeout ends it
            data += chunk
except OSError as exc:
    data += repr(exc).encode()
sys.stdout.write(repr(data[:200]))
"""


def ask_as_nobody(port: int, request: str) -> str:
    """``request`` (e.g. ``GET /json/version``) sent to ``127.0.0.1:port`` by uid 65534; what came back (repr)."""
    setpriv = ["setpriv", "--reuid", "65534", "--regid", "65534", "--clear-groups"]
    argv = [*setpriv, "/usr/bin/python3", "-c", ASK, str(port), request]
    return subprocess.run(argv, capture_output=True, text=True, check=True, timeout=60).stdout
