"""Child for ManagedProcess tests: writes argv[2] MiB to stdout and stderr, then listens on argv[1]."""

from __future__ import annotations

import socket
import sys

port = int(sys.argv[1])
mebibytes = int(sys.argv[2])
line = b"x" * 1023 + b"\n"
for i in range(mebibytes * 1024):
    (sys.stdout if i % 2 else sys.stderr).buffer.write(line)
sys.stdout.buffer.write(b"last line of stdout\n")
sys.stdout.flush()
sys.stderr.flush()
server = socket.create_server(("127.0.0.1", port))
while True:
    conn, _ = server.accept()
    conn.close()
