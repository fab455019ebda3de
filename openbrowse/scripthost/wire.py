"""What the host and the server agree on: JSON lines over one inherited socket, CDP frames over another, and bounds.

Both sockets are one end of a ``socketpair`` the server made; the host finds them as inherited descriptors
(``--channel-fd``, ``--cdp-fd``), never by a path.

Messages (every one a JSON object on one line, ``type`` first, then ``id``):

- host → server ``hello`` ``{token}``: the first line; the server drops a connection without the right token.
- server → host ``run`` ``{id, source, filename, targetId, limit, store}``.
- host → server ``call`` ``{id, method, args}``, answered by server → host ``reply`` ``{id, ok, value | error, kind}``.
- host → server ``output`` ``{id, text}``: what the running script printed so far (sent while it runs, so a
  script that is killed still shows its output).
- host → server ``done`` ``{id, stdout, stdoutChars, error, timedOut}``.
"""

from __future__ import annotations

TOKEN_ENV = "OPENBROWSE_SCRIPTHOST_TOKEN"
CDP_HEADER = 4
"""A CDP frame is a 4-byte big-endian length, then that many bytes of one CDP JSON message."""
CDP_COMMAND_LIMIT = 16 * 1024 * 1024
"""The largest CDP command the host may send (an ``evaluate`` of a big expression fits)."""
CDP_MESSAGE_LIMIT = 64 * 1024 * 1024
"""The largest CDP message the server passes on (a full-page screenshot fits)."""
MAX_LINE = 48 * 1024 * 1024
"""The longest line either side accepts (a file of :data:`FILE_LIMIT` bytes, base64-encoded, fits)."""
FILE_LIMIT = 16 * 1024 * 1024
"""The largest file a script may read or write through the file helpers."""
OUTPUT_LIMIT = 256 * 1024
"""Characters of a run's output that are sent to the server; beyond it only the count goes on."""
OUTPUT_CHUNK = 64 * 1024
