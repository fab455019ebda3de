"""Who owns the other end of a loopback TCP connection: the kernel's socket table, asked over NETLINK_SOCK_DIAG.

TCP has no ``SO_PEERCRED``. For a connection between two sockets of this host, the kernel still knows the client
socket and the uid that created it; ``sock_diag`` looks it up by its exact four-tuple (one request, one answer, no
scan of ``/proc/net/tcp``). Blocking: call from a thread.
"""

from __future__ import annotations

import socket
import struct

__all__ = ["loopback_peer_uid"]

NETLINK_SOCK_DIAG = 4
SOCK_DIAG_BY_FAMILY = 20
NLM_F_REQUEST = 1
NLMSG_ERROR = 2
_NOCOOKIE = 0xFFFFFFFF
_HEADER = struct.Struct("=IHHII")
_UID_OFFSET = _HEADER.size + 4 + 48 + 12


def _address(ip: str) -> bytes:
    return socket.inet_aton(ip) + bytes(12)


def loopback_peer_uid(conn: socket.socket) -> int | None:
    """The uid owning the client end of the accepted IPv4 connection ``conn``, or None if the kernel has no such
    socket in this network namespace (the client is gone, or lives elsewhere)."""
    local_ip, local_port = conn.getsockname()[:2]
    peer_ip, peer_port = conn.getpeername()[:2]
    # the socket sought is the client's: its local end is our peer, its remote end is us
    request = struct.pack("=BBBBI", socket.AF_INET, socket.IPPROTO_TCP, 0, 0, 0xFFFFFFFF)
    request += struct.pack("!HH", peer_port, local_port) + _address(peer_ip) + _address(local_ip)
    request += struct.pack("=III", 0, _NOCOOKIE, _NOCOOKIE)
    message = _HEADER.pack(_HEADER.size + len(request), SOCK_DIAG_BY_FAMILY, NLM_F_REQUEST, 1, 0) + request
    with socket.socket(socket.AF_NETLINK, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC, NETLINK_SOCK_DIAG) as diag:
        diag.settimeout(2.0)
        diag.sendto(message, (0, 0))
        answer = diag.recv(8192)
    if len(answer) < _HEADER.size:
        return None
    _, kind, _, _, _ = _HEADER.unpack_from(answer)
    if kind == NLMSG_ERROR or len(answer) < _UID_OFFSET + 4:
        return None
    (uid,) = struct.unpack_from("=I", answer, _UID_OFFSET)
    return int(uid)
