"""After the app's shutdown began, ``/v3/mcp`` answers 503 and never loads the SDK."""

from __future__ import annotations

import httpx
from fastapi import FastAPI

from openbrowse.api.mcp_endpoint import McpEndpoint


async def test_a_request_after_close_is_refused_without_loading_the_sdk() -> None:
    endpoint = McpEndpoint(FastAPI())
    await endpoint.aclose()
    transport = httpx.ASGITransport(app=endpoint)
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
        response = await client.post("/v3/mcp", json={})
    assert (response.status_code, response.json()) == (503, {"detail": "The server is shutting down."})
    assert endpoint.loaded is None
