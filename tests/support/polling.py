"""Waiting for a session to reach a status by polling the API, as clients do."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from browser_use_sdk.v3 import AsyncBrowserUse


async def wait_for_status(
    client: AsyncBrowserUse, session_id: Any, statuses: set[str], timeout: float = 60.0, interval: float = 0.1
) -> Any:
    """Poll ``sessions.get`` until the status is one of ``statuses``; return the session."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = await client.sessions.get(session_id)
        if last.status.value in statuses:
            return last
        await asyncio.sleep(interval)
    raise TimeoutError(f"session {session_id} stayed {last.status.value if last else '?'}; wanted {statuses}")
