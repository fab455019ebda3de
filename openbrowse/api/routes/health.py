"""``/health`` (process up, no auth) and ``/health/details`` (counts and host pressure, API key)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import psutil
from fastapi import APIRouter, Request, Response

from openbrowse import __version__
from openbrowse.api.deps import ApiKey, ManagerDep, SettingsDep
from openbrowse.api.openapi_docs import error_responses
from openbrowse.api.schemas import (
    ClusterNodeView,
    ClusterView,
    DatabaseView,
    HealthDetailsView,
    HealthView,
    LoopLagView,
    LoopStallView,
    NodeView,
    SandboxView,
    SlotUseView,
    SparesView,
)
from openbrowse.cluster.presence import NodePresence
from openbrowse.domain.clock import iso_from_epoch
from openbrowse.errors import StoreUnavailable
from openbrowse.loop_lag import LoopLagMonitor
from openbrowse.sessions.host_report import SlotMemory, live_objects, slot_report

router = APIRouter(tags=["health"])

_CPU_BUSY_PERCENT = 90.0
_MEMORY_BUSY_PERCENT = 90.0
STALL_SITES_SHOWN = 20
SANDBOX_NOT_PROBED = "The sandbox has not been probed yet: whether slots will be sandboxed is not known."


@router.get("/favicon.ico", include_in_schema=False)
async def favicon() -> Response:
    """Browsers ask for it on every live-view page; answer without a 404 in their console."""
    return Response(status_code=204)


@router.get("/health", response_model=HealthView, responses={503: {"model": HealthView}})
async def health(request: Request, response: Response) -> HealthView:
    if await _database_reachable(request) is False:
        response.status_code = 503
        return HealthView(status="degraded", database="unreachable")
    return HealthView()


async def _database_reachable(request: Request) -> bool | None:
    """Whether the store answers now; None before the app has opened it."""
    ping: Callable[[], Awaitable[bool]] | None = getattr(request.app.state, "database_ping", None)
    return await ping() if ping is not None else None


async def _database(request: Request) -> DatabaseView | None:
    reachable = await _database_reachable(request)
    if reachable is None:
        return None
    return DatabaseView(kind=request.app.state.database_kind, reachable=reachable)


@router.get(
    "/health/details",
    response_model=HealthDetailsView,
    response_model_by_alias=True,
    dependencies=[ApiKey],
    responses=error_responses(401, 429),
)
async def health_details(request: Request, manager: ManagerDep, settings: SettingsDep) -> HealthDetailsView:
    counts = manager.counts()
    cpu = psutil.cpu_percent(interval=None)
    memory = psutil.virtual_memory().percent
    free_slots = settings.MAX_CONCURRENT_SESSIONS - counts["running"] - counts["parked"]
    database = await _database(request)
    return HealthDetailsView(
        version=__version__,
        active_sessions=counts["running"],
        queued_sessions=counts["queued"],
        parked_sessions=counts["parked"],
        max_concurrent_sessions=settings.MAX_CONCURRENT_SESSIONS,
        running=counts["running"],
        queued=counts["queued"],
        parked=counts["parked"],
        cpu=cpu,
        memory=memory,
        is_available=(free_slots > 0 or counts["parked"] > 0)
        and cpu < _CPU_BUSY_PERCENT
        and memory < _MEMORY_BUSY_PERCENT,
        loop_lag_ms=_loop_lag(request),
        loop_stalls=_loop_stalls(request),
        live_objects=live_objects(),
        sandbox=_sandbox(request, settings),
        file_warnings=getattr(request.app.state, "file_warnings", []),
        database=database,
        **await _cluster(request, database_reachable=database is None or database.reachable),
        **await _slot_memory(request),
    )


async def _cluster(request: Request, *, database_reachable: bool) -> dict[str, object]:
    presence: NodePresence | None = getattr(request.app.state, "presence", None)
    if presence is None:
        return {}
    node = NodeView(id=presence.node_id, url=presence.url)
    if not database_reachable:
        return {"node": node}  # ``database`` says why there is no cluster view
    try:
        view = await presence.cluster()
    except StoreUnavailable:
        return {"node": node}  # ``database`` already says it cannot be reached
    nodes = [
        ClusterNodeView(
            id=row.id,
            url=row.url,
            slots=row.slots,
            busy=row.busy,
            draining=row.draining,
            last_seen_at=iso_from_epoch(row.last_seen_at),
        )
        for row in view.nodes
    ]
    return {"node": node, "cluster": ClusterView(nodes=nodes, queued=view.queued)}


def _sandbox(request: Request, settings: SettingsDep) -> SandboxView:
    if not hasattr(request.app.state, "sandbox_problem"):
        return sandbox_view(None, probed=False, allow_unsandboxed=settings.ALLOW_UNSANDBOXED)
    problem: str | None = request.app.state.sandbox_problem
    return sandbox_view(problem, probed=True, allow_unsandboxed=settings.ALLOW_UNSANDBOXED)


def sandbox_view(problem: str | None, *, probed: bool, allow_unsandboxed: bool) -> SandboxView:
    """What ``/health/details`` says about the sandbox: enabled only once the probe has answered that it works;
    before that ``unknown`` (never a reassuring guess), after a failed probe the reason and what follows from it."""
    if not probed:
        return SandboxView(enabled=False, state="unknown", warning=SANDBOX_NOT_PROBED)
    if problem is None:
        return SandboxView(enabled=True, state="enabled")
    warning = (
        "Slots run WITHOUT the sandbox (ALLOW_UNSANDBOXED=1): a hostile page or script can reach this host."
        if allow_unsandboxed
        else "Sessions refuse to start until the sandbox is available or ALLOW_UNSANDBOXED=1 is set."
    )
    return SandboxView(enabled=False, state="unavailable", problem=problem, warning=warning)


async def _slot_memory(request: Request) -> dict[str, object]:
    pool = getattr(request.app.state, "pool", None)
    if pool is None:
        return {}
    report = await slot_report(pool)
    spares = [_slot_view(use) for use in report.spares]
    return {
        "slots": [_slot_view(use) for use in report.slots],
        "spares": SparesView(
            wanted=report.spares_wanted,
            count=len(spares),
            pss_mib=round(sum(view.pss_mib for view in spares), 1),
            slots=spares,
        ),
    }


def _slot_view(use: SlotMemory) -> SlotUseView:
    return SlotUseView(index=use.index, owner=use.owner, state=use.state, pss_mib=use.pss_mib)


def _loop_lag(request: Request) -> LoopLagView | None:
    monitor: LoopLagMonitor | None = getattr(request.app.state, "loop_lag", None)
    if monitor is None:
        return None
    lag = monitor.figures()
    return LoopLagView(current=lag.current_ms, max=lag.max_ms, p99=lag.p99_ms, samples=lag.samples)


def _loop_stalls(request: Request) -> list[LoopStallView] | None:
    monitor: LoopLagMonitor | None = getattr(request.app.state, "loop_lag", None)
    if monitor is None:
        return None
    return [
        LoopStallView(
            site=site.label,
            stalls=figures.stalls,
            samples=figures.samples,
            total_ms=round(figures.total * 1000, 1),
            worst_ms=round(figures.worst * 1000, 1),
            stack=list(figures.stack),
        )
        for site, figures in monitor.stalls(STALL_SITES_SHOWN)
    ]
