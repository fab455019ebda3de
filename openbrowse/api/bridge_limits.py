"""What the WebSocket bridges may hold: connections per target, and the frames on their way to a client.

A CDP token holder could otherwise open any number of sockets to one browser and have Chromium answer each with
frames the server buffers for a client that never reads. Four bounds close that:

* **connections**: at most ``cap`` bridges per target (a raw browser's CDP, a live view); one more is refused
  before its handshake with a 429 that names the setting;
* **descriptors**: every bridge takes its share of the process's descriptor budget, over it the handshake is
  refused 503 (:mod:`openbrowse.api.bridge_admission`);
* **frame size**: each direction has its own ceiling (``ws_bridge.bridge``), over it the connection closes 1009;
* **backpressure**: the bridge takes the next frame from one side only once the other side accepted the last one,
  and the upstream connection queues at most ``UPSTREAM_QUEUE_FRAMES`` before it stops reading its socket. What a
  bridge holds is therefore a few frames, whatever the client does, and :class:`BridgeBoard` shows it
  (``/metrics``: ``openbrowse_ws_bridge_*``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Literal

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector
from starlette.requests import HTTPConnection
from websockets.asyncio.client import ClientConnection

from openbrowse.network.fd_budget import FD_BUDGET, FdBudget

__all__ = ["UPSTREAM_QUEUE_FRAMES", "BridgeBoard", "BridgeFlow", "BridgeKind", "board_of", "too_many"]

BridgeKind = Literal["cdp", "vnc"]
UPSTREAM_QUEUE_FRAMES = 1
"""Frames the upstream connection reads ahead of the bridge before it stops reading its socket (websockets'
``max_queue``; its default of 16, or the 64 used before, let a stalled client pin that many large frames)."""


@dataclass(eq=False)
class BridgeFlow:
    """One bridge's frames towards its client: taken from upstream and not yet accepted by the client."""

    kind: BridgeKind
    held_frames: int = 0
    held_bytes: int = 0
    upstream: ClientConnection | None = None

    def queued_upstream(self) -> int:
        """Frames the upstream connection has read from its socket that the bridge has not taken yet."""
        assembler = getattr(self.upstream, "recv_messages", None)
        frames = getattr(assembler, "frames", None)
        return len(frames) if frames is not None else 0

    def upstream_paused(self) -> bool:
        """Whether the upstream connection stopped reading its socket because its queue is full."""
        return bool(getattr(getattr(self.upstream, "recv_messages", None), "paused", False))


@dataclass
class BridgeBoard:
    """The open bridges of one app: connection counts per target, and each bridge's flow (for ``/metrics``)."""

    budget: FdBudget = FD_BUDGET
    """The descriptor budget the bridges take their sockets from (the process's one)."""
    _open: Counter[tuple[BridgeKind, str]] = field(default_factory=Counter)
    _flows: set[BridgeFlow] = field(default_factory=set)

    def admit(self, kind: BridgeKind, target_id: str, cap: int) -> bool:
        """Count one more bridge to ``target_id``; False (nothing counted) when ``cap`` are open already."""
        key = (kind, target_id)
        if self._open[key] >= cap:
            return False
        self._open[key] += 1
        return True

    def leave(self, kind: BridgeKind, target_id: str) -> None:
        key = (kind, target_id)
        self._open[key] -= 1
        if self._open[key] <= 0:
            del self._open[key]

    def open_to(self, kind: BridgeKind, target_id: str) -> int:
        return self._open[(kind, target_id)]

    def flow(self, kind: BridgeKind) -> BridgeFlow:
        flow = BridgeFlow(kind)
        self._flows.add(flow)
        return flow

    def closed(self, flow: BridgeFlow) -> None:
        self._flows.discard(flow)

    def exposition(self) -> bytes:
        """The ``openbrowse_ws_bridge_*`` gauges in Prometheus text format."""
        registry = CollectorRegistry(auto_describe=False)
        registry.register(_BoardCollector(self))
        return generate_latest(registry)

    def flows(self) -> list[BridgeFlow]:
        return list(self._flows)


def board_of(conn: HTTPConnection) -> BridgeBoard:
    """The app's board (made on first use: the bridges and ``/metrics`` share it)."""
    state = conn.app.state
    board: BridgeBoard | None = getattr(state, "bridge_board", None)
    if board is None:
        board = state.bridge_board = BridgeBoard()
    return board


def too_many(what: str, cap: int, setting: str) -> str:
    """The 429's one sentence: how many are open, and which setting raises the cap."""
    return f"{what} already has {cap} connections open, the most allowed ({setting}); close one first."


class _BoardCollector(Collector):
    def __init__(self, board: BridgeBoard) -> None:
        self._board = board

    def collect(self) -> Iterator[GaugeMetricFamily]:
        gauges = {
            "open": GaugeMetricFamily("openbrowse_ws_bridges", "Open WebSocket bridges.", labels=["kind"]),
            "held_frames": GaugeMetricFamily(
                "openbrowse_ws_bridge_held_frames",
                "Frames bridges took from upstream that their client has not accepted yet.",
                labels=["kind"],
            ),
            "held_bytes": GaugeMetricFamily(
                "openbrowse_ws_bridge_held_bytes", "Bytes of those frames.", labels=["kind"]
            ),
            "queued": GaugeMetricFamily(
                "openbrowse_ws_bridge_upstream_queued_frames",
                "Frames read from upstream sockets that bridges have not taken yet.",
                labels=["kind"],
            ),
            "paused": GaugeMetricFamily(
                "openbrowse_ws_bridge_upstream_paused",
                "Bridges that stopped reading upstream until their client catches up.",
                labels=["kind"],
            ),
        }
        for kind in ("cdp", "vnc"):
            flows = [flow for flow in self._board.flows() if flow.kind == kind]
            gauges["open"].add_metric([kind], len(flows))
            gauges["held_frames"].add_metric([kind], sum(flow.held_frames for flow in flows))
            gauges["held_bytes"].add_metric([kind], sum(flow.held_bytes for flow in flows))
            gauges["queued"].add_metric([kind], sum(flow.queued_upstream() for flow in flows))
            gauges["paused"].add_metric([kind], sum(flow.upstream_paused() for flow in flows))
        yield from gauges.values()
