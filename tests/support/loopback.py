"""One HTTP client for the tests' plain-HTTP calls to the servers they start on this machine.

``httpx.get()`` and its siblings build a new client for every call, and with it a TLS context: about 30 ms of CPU,
even for ``http://127.0.0.1``. The readiness and status polls of the end-to-end tests made that a visible share of
the suite's CPU on 2 cores. This client is built once per process and keeps no idle connection, so a call never
reuses a connection to a server that has stopped since (or to another server now on the same port).
"""

from __future__ import annotations

import httpx

_client = httpx.Client(limits=httpx.Limits(max_keepalive_connections=0))

get = _client.get
post = _client.post
put = _client.put
patch = _client.patch
delete = _client.delete
request = _client.request
stream = _client.stream
