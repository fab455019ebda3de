"""The byte relays across a sandbox's network boundary (spec §24.4), each one ``socat`` (Debian's ``socat``).

A slot's network namespace has only ``lo``, so its endpoints are out of reach of the host and of other slots, and
the host's loopback is out of reach of the slot. Three kinds of relay cross that line, always through a Unix
socket in the slot's socket directory (a Unix socket on a bind mount is the same socket in both mount namespaces):

* **out** (inside the sandbox, as the slot's uid): ``UNIX-LISTEN:<dir>/<name>.sock`` → ``TCP:127.0.0.1:<port>`` of the
  slot's own namespace, for Chromium's DevTools and websockify;
* **host** (outside, the server's uid): ``TCP-LISTEN:127.0.0.1:<port>`` on the host → ``UNIX-CONNECT:<dir>/<name>``,
  so the server reaches a slot's CDP and live view at the addresses it always used (§24.4 "the server reaches them
  through its own forwarders"); the always-refused set keeps every slot's ports away from every other slot;
* **egress** (inside): ``TCP-LISTEN:127.0.0.1:<proxy port>`` → ``UNIX-CONNECT:<dir>/egress.sock``, the server's egress
  enforcer; Chromium's ``--proxy-server`` points here. Nothing else leads out.

socat forks a child per connection, which dies with it; the listener is a supervised :class:`ManagedProcess`.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from openbrowse.slots.process import ManagedProcess, ProcessHook

__all__ = ["EGRESS_PROXY_PORT", "Relay", "egress_relay", "host_relay", "inside_relay", "socat"]

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


def inside_relay(name: str, socket_path: Path, port: int) -> Relay:
    """Unix socket (reachable from the host) → a TCP port of the slot's own namespace."""
    listen = f"UNIX-LISTEN:{socket_path},fork,unlink-early,mode=600"
    return Relay(f"{name} relay", [socat(), "-lf", "/dev/null", listen, f"TCP:127.0.0.1:{port}"])


def host_relay(name: str, port: int, socket_path: Path) -> Relay:
    """A host loopback TCP port → a slot's Unix socket.

    It runs outside the sandbox, so nothing ends it with the holder: ``--pdeathsig`` ends it with the server even
    when the server is SIGKILLed (an orphan would keep the port and block that slot for every other instance).
    """
    listen = f"TCP-LISTEN:{port},bind=127.0.0.1,fork,reuseaddr"
    die_with_server = [shutil.which("setpriv") or "/usr/bin/setpriv", "--pdeathsig", "KILL", "--"]
    argv = [*die_with_server, socat(), "-lf", "/dev/null", listen, f"UNIX-CONNECT:{socket_path}"]
    return Relay(f"{name} forwarder", argv)


def egress_relay(socket_path: Path, port: int = EGRESS_PROXY_PORT) -> Relay:
    """The proxy port inside the slot → the server's egress enforcer."""
    listen = f"TCP-LISTEN:{port},bind=127.0.0.1,fork,reuseaddr"
    return Relay("egress relay", [socat(), "-lf", "/dev/null", listen, f"UNIX-CONNECT:{socket_path}"])
