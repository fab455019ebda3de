"""The egress relay of a sandbox (spec §24.4): ``socat`` (Debian's ``socat``) inside the slot, as its uid.

A slot's network namespace has only ``lo``, so its endpoints are out of reach of the host and of other slots, and
the host's loopback is out of reach of the slot. The one way out: ``TCP-LISTEN:127.0.0.1:<proxy port>`` →
``UNIX-CONNECT:<seam>/egress.sock``, the server's egress enforcer behind a socket in the slot's read-only seam
directory (:mod:`.seam`); Chromium's ``--proxy-server`` points here. The way in (the server reaching Chromium's
DevTools and websockify) needs no relay: the server makes its sockets inside the slot's namespace (:mod:`.netns`,
:mod:`.gate`).

socat forks a child per connection, which dies with it; the listener is a supervised :class:`ManagedProcess`.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from openbrowse.slots.process import ManagedProcess, ProcessHook

__all__ = ["EGRESS_PROXY_PORT", "Relay", "egress_relay", "socat"]

EGRESS_PROXY_PORT = 3128
"""The proxy port inside every slot's namespace (namespaces are private, so every slot may use the same one)."""


def socat() -> str:
    return shutil.which("socat") or "/usr/bin/socat"


@dataclass(frozen=True, slots=True)
class Relay:
    """One relay's name and argv; :meth:`process` makes the supervised child."""

    name: str
    argv: list[str]

    def process(
        self,
        env: Mapping[str, str],
        *,
        wrap: Callable[[list[str]], list[str]] | None = None,
        on_spawn: ProcessHook | None = None,
        on_exit: ProcessHook | None = None,
    ) -> ManagedProcess:
        argv = wrap(self.argv) if wrap is not None else self.argv
        return ManagedProcess(self.name, argv, env=env, terminate_grace=1.0, on_spawn=on_spawn, on_exit=on_exit)


def egress_relay(socket_path: Path, port: int = EGRESS_PROXY_PORT) -> Relay:
    """The proxy port inside the slot → the server's egress enforcer."""
    listen = f"TCP-LISTEN:{port},bind=127.0.0.1,fork,reuseaddr"
    return Relay("egress relay", [socat(), "-lf", "/dev/null", listen, f"UNIX-CONNECT:{socket_path}"])
