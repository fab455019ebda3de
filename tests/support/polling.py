"""Waiting for a session to reach a status by polling the API with the official SDK, as clients do."""

from __future__ import annotations

from typing import Any

from browser_use_sdk.v3 import AsyncBrowserUse

from tests.support.waiting import wait_for_async


async def wait_for_status(
    client: AsyncBrowserUse, session_id: Any, statuses: set[str], timeout: float = 60.0, interval: float = 0.1
) -> Any:
    """Poll ``sessions.get`` until the status is one of ``statuses``; return the session."""

    async def reached() -> Any:
        session = await client.sessions.get(session_id)
        return session if session.status.value in statuses else None

    return await wait_for_async(reached, timeout, interval=interval, what=f"session {session_id} in {statuses}")
