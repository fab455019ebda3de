"""The MCP gate remembers which MCP sessions are in use, so a silent client's browser context can be released."""

from __future__ import annotations

from fastapi import FastAPI
from starlette.types import Receive, Scope, Send

from openbrowse.api.mcp_endpoint import McpGate


async def _inner(scope: Scope, receive: Receive, send: Send) -> None:  # never reached here
    raise AssertionError("not called")


def test_a_session_silent_longer_than_the_window_is_no_longer_in_use() -> None:
    now = [1000.0]
    gate = McpGate(FastAPI(), _inner, clock=lambda: now[0])
    gate.used("quiet")
    now[0] += 50
    gate.used("busy")
    assert sorted(gate.recently_used(60)) == ["busy", "quiet"]
    now[0] += 20
    assert gate.recently_used(60) == ["busy"]
    gate.used("quiet")  # a call after the window brings it back (its context is made afresh by the tools)
    assert sorted(gate.recently_used(60)) == ["busy", "quiet"]
