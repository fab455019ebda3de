"""``GET /metrics``: Prometheus text format (spec §19.3), behind the API key as ``/health/details`` is."""

from __future__ import annotations

from fastapi import APIRouter, Request, Response
from prometheus_client import CONTENT_TYPE_LATEST

from openbrowse.api.bridge_limits import board_of
from openbrowse.api.deps import ApiKey
from openbrowse.api.loop_stall_metrics import loop_stall_exposition
from openbrowse.api.node_label import label_with_node
from openbrowse.api.openapi_docs import error_responses
from openbrowse.cluster.presence import NodePresence
from openbrowse.sessions.metrics import ServiceMetrics

router = APIRouter(tags=["health"])


@router.get(
    "/metrics",
    dependencies=[ApiKey],
    response_class=Response,
    responses={
        200: {"content": {"text/plain": {}}, "description": "Prometheus text format"},
        **error_responses(401, 429),
    },
)
async def metrics(request: Request) -> Response:
    """Sessions by status, slots, queue, run and step durations, LLM tokens and cost by model, failures by
    ``failureKind``, end reasons, webhook deliveries, process memory, what the WebSocket bridges hold, and the
    code sites that held the event loop."""
    service: ServiceMetrics = request.app.state.metrics
    stalls = loop_stall_exposition(getattr(request.app.state, "loop_lag", None))
    exposition = await service.render() + board_of(request).exposition() + stalls
    presence: NodePresence | None = getattr(request.app.state, "presence", None)
    if presence is not None:
        exposition = label_with_node(exposition, presence.node_id)
    return Response(exposition, media_type=CONTENT_TYPE_LATEST)
