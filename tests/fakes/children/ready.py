"""Child for ManagedProcess tests: prints a line, then accepts TCP connections on argv[1] until terminated."""

from __future__ import annotations

import socket
import sys

port = int(sys.argv[1])
delay = float(sys.argv[2]) if len(sys.argv) > 2 else 0.0
if delay:
    import time

    time.sleep(delay)
server = socket.create_server(("127.0.0.1", port))
print(f"ready on {port}", flush=True)
while True:
    conn, _ = server.accept()
    conn.close()
