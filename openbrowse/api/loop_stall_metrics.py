"""``openbrowse_loop_stall_*`` in ``/metrics``: the code sites that held the event loop longest, a bounded few.

The label ``site`` is ``owner > where`` (:mod:`openbrowse.loop_stalls`); only the :data:`TOP_SITES` worst sites
get a series and the rest are summed under ``other``, so the series count stays bounded however many sites
stalled. The full list with a stack per site is in ``/health/details`` → ``loopStalls``.
"""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector

from openbrowse.loop_lag import LoopLagMonitor

TOP_SITES = 8


class _StallCollector(Collector):
    def __init__(self, monitor: LoopLagMonitor) -> None:
        self._monitor = monitor

    def collect(self) -> Iterator[Metric]:
        lag = self._monitor.figures()
        yield GaugeMetricFamily(
            "openbrowse_loop_lag_p99_seconds", "Event-loop lag, 99th percentile of the last minute.", lag.p99_ms / 1000
        )
        seconds = CounterMetricFamily(
            "openbrowse_loop_stall_seconds",
            "Event-loop lag summed over stalls over 20 ms, by the code site that held the loop.",
            labels=["site"],
        )
        stalls = CounterMetricFamily(
            "openbrowse_loop_stalls",
            "Event-loop stalls over 20 ms, by the code site that held the loop.",
            labels=["site"],
        )
        for site, figures in self._monitor.stalls(TOP_SITES):
            seconds.add_metric([site.label], figures.total)
            stalls.add_metric([site.label], figures.stalls)
        yield seconds
        yield stalls


def loop_stall_exposition(monitor: LoopLagMonitor | None) -> bytes:
    if monitor is None:
        return b""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_StallCollector(monitor))
    return generate_latest(registry)
