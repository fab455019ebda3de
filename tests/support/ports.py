"""A free TCP port on 127.0.0.1, for the servers and fixture sites the tests start."""

from __future__ import annotations

import socket

__all__ = ["free_port"]


def free_port() -> int:
    """A port nothing listens on now (the OS's pick; the caller binds it soon after)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])
