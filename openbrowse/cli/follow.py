"""Following a session's ``/events`` stream to its end, resuming with ``Last-Event-ID`` when the link drops."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

import httpx
from httpx_sse import SSEError, connect_sse

from openbrowse.cli.client import STREAM_TIMEOUT, ApiClient, CliError
from openbrowse.cli.render import RESTING

MAX_RECONNECTS = 5
"""Consecutive failed attempts before giving up; any event received resets the count."""

EventHandler = Callable[[str, Any], None]


def follow(client: ApiClient, session_id: str, on_event: EventHandler, *, after: str | None = None) -> dict[str, Any]:
    """Deliver each event (name, parsed data) to ``on_event`` until the session rests; return the final session.

    The feed starts after message ``after`` (from the beginning when None). Every message is delivered once: a
    dropped stream is resumed after the last message received, and a stream that ended while the session still
    runs (a restart, a proxy) is resumed too.
    """
    last_id = after
    failures = 0
    while True:
        headers = {"Last-Event-ID": last_id} if last_id else {}
        try:
            with connect_sse(
                client.http, "GET", f"/sessions/{session_id}/events", headers=headers, timeout=STREAM_TIMEOUT
            ) as source:
                client.check(source.response)
                for event in source.iter_sse():
                    if not event.data:  # httpx-sse turns heartbeat comments into empty events
                        continue
                    if event.event == "message":
                        last_id = event.id
                    on_event(event.event, json.loads(event.data))
                    failures = 0
        except (httpx.TransportError, SSEError) as exc:
            failures += 1
            if failures > MAX_RECONNECTS:
                raise client.unreachable(exc) from exc
            time.sleep(min(2.0 ** (failures - 1), 10.0))
            continue
        session = client.session(session_id)
        if session["status"] in RESTING:
            return session
        failures += 1
        if failures > MAX_RECONNECTS:
            raise CliError(f"the event stream of session {session_id} keeps ending while it is {session['status']}")
