"""Admitting a WebSocket bridge (a raw browser's CDP, a live view): one place for what both routes check first.

Before a handshake is accepted, in this order:

1. **credentials**, by the route's own check: refused 401/429 (:func:`~openbrowse.api.errors.auth_refusal`) or 403
   for the dashboard's credentials sent from another site;
2. **the target's cap** (``CDP_MAX_CONNECTIONS_PER_BROWSER``, ``LIVE_VIEW_MAX_CONNECTIONS``): refused 429 naming
   the setting;
3. **the process's descriptor budget** (:mod:`openbrowse.network.fd_budget`): a bridge holds the client's socket
   and its upstream one, and the upstream's other end is a gate connection that takes its own share; with no room
   for both, the handshake is refused 503 with ``Retry-After``, so a flood of sockets spread over many browsers
   and viewers cannot bring the server to ``EMFILE`` (``/health`` and the other slots keep theirs).

What was taken is given back when the bridge ends, whatever ends it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

from fastapi import WebSocket
from fastapi.responses import JSONResponse

from openbrowse.api.auth import AuthFailed, AuthThrottled, CrossSiteCredentials
from openbrowse.api.bridge_limits import BridgeFlow, BridgeKind, board_of, too_many
from openbrowse.api.errors import auth_refusal
from openbrowse.api.ws_bridge import deny_websocket
from openbrowse.network.fd_budget import GATE_FDS

__all__ = ["BRIDGE_FDS", "BUDGET_SPENT", "RETRY_AFTER_S", "admitted_bridge"]

BRIDGE_FDS = 2
"""Descriptors one bridge holds itself: the client's socket and the upstream one."""
RETRY_AFTER_S = 5
BUDGET_SPENT = "The server has as many connections open as it can hold; try again shortly."


@asynccontextmanager
async def admitted_bridge(
    websocket: WebSocket,
    kind: BridgeKind,
    target_id: str,
    authorize: Callable[[], object],
    *,
    cap: int,
    setting: str,
    what: str,
) -> AsyncIterator[BridgeFlow | None]:
    """The bridge's flow once ``websocket`` (not yet accepted) passed ``authorize``, ``cap`` bridges to
    ``target_id`` and the descriptor budget; None once it was refused (the refusal is sent: nothing left to do).
    ``what`` names the target in the cap's refusal ("This browser")."""
    try:
        authorize()
    except (AuthFailed, AuthThrottled) as exc:
        await deny_websocket(websocket, auth_refusal(exc))
        yield None
        return
    except CrossSiteCredentials as exc:
        await deny_websocket(websocket, JSONResponse({"detail": exc.detail}, status_code=exc.status_code))
        yield None
        return
    board = board_of(websocket)
    if not board.admit(kind, target_id, cap):
        detail = too_many(what, cap, setting)
        await deny_websocket(websocket, JSONResponse({"detail": detail}, status_code=429))
        yield None
        return
    if not board.budget.try_acquire(BRIDGE_FDS, f"a {kind} bridge", keep_free=GATE_FDS):
        board.leave(kind, target_id)
        refusal = JSONResponse({"detail": BUDGET_SPENT}, status_code=503, headers={"Retry-After": str(RETRY_AFTER_S)})
        await deny_websocket(websocket, refusal)
        yield None
        return
    flow = board.flow(kind)
    try:
        yield flow
    finally:
        board.closed(flow)
        board.budget.release(BRIDGE_FDS)
        board.leave(kind, target_id)
