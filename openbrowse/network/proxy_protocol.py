"""The HTTP/1.x proxy wire format the egress enforcer speaks: bounded heads, strict parsing, rewritten headers.

Only what a browser and a script send to an HTTP proxy is accepted: ``CONNECT host:port`` and absolute-form
``http://`` requests. Heads are bounded (:data:`MAX_HEAD_BYTES`, :data:`MAX_HEADERS`) and parsed strictly
(CRLF lines, token header names, no obsolete line folding), so nothing ambiguous is ever passed upstream.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from openbrowse.network.hosts import Target

MAX_HEAD_BYTES = 32 * 1024
MAX_HEADERS = 100
HEAD_END = b"\r\n\r\n"

_TOKEN_CHARS = frozenset("!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
_VERSIONS = frozenset({"HTTP/1.0", "HTTP/1.1"})
_HOP_BY_HOP = frozenset(
    {"connection", "keep-alive", "proxy-connection", "proxy-authorization", "proxy-authenticate", "te", "upgrade"}
)
_REASONS = {
    400: "Bad Request",
    403: "Forbidden",
    405: "Method Not Allowed",
    408: "Request Timeout",
    431: "Request Header Fields Too Large",
    502: "Bad Gateway",
    503: "Service Unavailable",
    504: "Gateway Timeout",
}


class BadHead(Exception):
    """A head that cannot be read; ``status`` is what the client is answered (400, 408, 431, 502)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


Headers = tuple[tuple[str, str], ...]


@dataclass(frozen=True, slots=True)
class RequestHead:
    method: str
    target: str
    version: str
    headers: Headers

    def tokens(self, name: str) -> frozenset[str]:
        """The comma-separated, lower-cased tokens of every ``name`` header (``Connection: keep-alive, Upgrade``)."""
        return _tokens(self.headers, name)

    @property
    def wants_upgrade(self) -> bool:
        return "upgrade" in self.tokens("connection") and any(k.lower() == "upgrade" for k, _ in self.headers)


@dataclass(frozen=True, slots=True)
class ResponseHead:
    version: str
    status: int
    reason: str
    headers: Headers


def _tokens(headers: Headers, name: str) -> frozenset[str]:
    found: set[str] = set()
    for key, value in headers:
        if key.lower() == name:
            found.update(part.strip().lower() for part in value.split(",") if part.strip())
    return frozenset(found)


async def read_head(reader: asyncio.StreamReader) -> bytes | None:
    """Bytes up to and including the blank line; None when the peer closed before sending anything.

    The reader's ``limit`` must be :data:`MAX_HEAD_BYTES` (set where the stream is made); a longer head is 431.
    """
    try:
        return await reader.readuntil(HEAD_END)
    except asyncio.IncompleteReadError as exc:
        if not exc.partial:
            return None
        raise BadHead(400, "The connection closed in the middle of the request head.") from exc
    except asyncio.LimitOverrunError as exc:
        raise BadHead(431, f"The request head is longer than {MAX_HEAD_BYTES} bytes.") from exc


def _parse_headers(lines: list[str], status: int) -> Headers:
    if len(lines) > MAX_HEADERS:
        raise BadHead(431 if status == 400 else status, f"More than {MAX_HEADERS} header lines.")
    headers: list[tuple[str, str]] = []
    for line in lines:
        name, colon, value = line.partition(":")
        if not colon or not name or any(c not in _TOKEN_CHARS for c in name):
            raise BadHead(status, "A header line is malformed.")
        value = value.strip(" \t")
        if any((ord(c) < 0x20 and c != "\t") or c == "\x7f" for c in value):
            raise BadHead(status, "A header value holds control characters.")
        headers.append((name, value))
    return tuple(headers)


def _lines(head: bytes, status: int) -> list[str]:
    if not head.endswith(HEAD_END):
        raise BadHead(status, "The head does not end with a blank line.")
    text = head[: -len(HEAD_END)].decode("latin-1")
    if "\n" in text.replace("\r\n", "") or "\r" in text.replace("\r\n", ""):
        raise BadHead(status, "The head has bare CR or LF line endings.")
    lines = text.split("\r\n")
    if any(line[:1] in (" ", "\t") for line in lines[1:]):
        raise BadHead(status, "Folded header lines are not accepted.")
    return lines


def parse_request(head: bytes) -> RequestHead:
    lines = _lines(head, 400)
    parts = lines[0].split(" ")
    if len(parts) != 3 or not parts[0] or any(c not in _TOKEN_CHARS for c in parts[0]) or parts[2] not in _VERSIONS:
        raise BadHead(400, "The request line is not 'METHOD target HTTP/1.x'.")
    if not parts[1]:
        raise BadHead(400, "The request has no target.")
    return RequestHead(parts[0].upper(), parts[1], parts[2], _parse_headers(lines[1:], 400))


def parse_response(head: bytes) -> ResponseHead:
    lines = _lines(head, 502)
    version, _, rest = lines[0].partition(" ")
    code, _, reason = rest.partition(" ")
    if version not in _VERSIONS or len(code) != 3 or not code.isdigit():
        raise BadHead(502, "The upstream status line is malformed.")
    return ResponseHead(version, int(code), reason, _parse_headers(lines[1:], 502))


def _without_hop_by_hop(headers: Headers, keep: frozenset[str] = frozenset()) -> list[tuple[str, str]]:
    listed = _tokens(headers, "connection")
    drop = (_HOP_BY_HOP | listed) - keep
    return [(k, v) for k, v in headers if k.lower() not in drop]


def _encode(start: str, headers: list[tuple[str, str]]) -> bytes:
    return ("\r\n".join([start, *(f"{k}: {v}" for k, v in headers)]) + "\r\n\r\n").encode("latin-1")


def forward_request_head(request: RequestHead, target: Target) -> bytes:
    """The request as the origin should see it: origin-form, ``Host`` from the URL, one request per connection."""
    upgrade = request.wants_upgrade
    kept = _without_hop_by_hop(request.headers, frozenset({"upgrade"}) if upgrade else frozenset())
    headers = [("Host", target.authority), *((k, v) for k, v in kept if k.lower() != "host")]
    headers.append(("Connection", "Upgrade" if upgrade else "close"))
    return _encode(f"{request.method} {target.path} HTTP/1.1", headers)


def forward_response_head(response: ResponseHead, raw: bytes) -> bytes:
    """Interim and ``101`` heads pass as they are; a final head says ``Connection: close`` (never reused)."""
    if response.status < 200:
        return raw
    headers = [*_without_hop_by_hop(response.headers), ("Connection", "close")]
    return _encode(f"{response.version} {response.status} {response.reason}".rstrip(), headers)


def simple_response(status: int, text: str, extra_headers: Headers = ()) -> bytes:
    """A complete short plain-text answer from the enforcer itself; the connection closes after it."""
    body = (text + "\n").encode()
    headers = [
        ("Content-Type", "text/plain; charset=utf-8"),
        ("Content-Length", str(len(body))),
        ("Cache-Control", "no-store"),
        ("X-Content-Type-Options", "nosniff"),
        *extra_headers,
        ("Connection", "close"),
    ]
    return _encode(f"HTTP/1.1 {status} {_REASONS.get(status, 'Error')}", headers) + body
