"""ServiceMetrics: the Prometheus metrics of one app (spec §19.3), in a registry of its own.

Two kinds of figures:

* gauges read at scrape time from the current state (sessions by status from the store, slots and the queue from
  the pool, pending webhooks from the outbox, the process from ``/proc``), so they are never stale;
* counters and histograms fed by events: every committed session change (runs ending, steps, tokens and cost by
  model, failures by ``failureKind``, end reasons), every raw browser's end and every webhook attempt.

A per-app registry, not the global one: tests build several apps in one process.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field

from prometheus_client import CollectorRegistry, Counter, Histogram, ProcessCollector, generate_latest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector

from openbrowse.domain.browsers import BrowserRecord
from openbrowse.domain.end_reasons import browser_end_reason
from openbrowse.domain.sessions import SessionRecord, SessionStatus
from openbrowse.slots.pool import PoolStats

logger = logging.getLogger(__name__)

RUN_BUCKETS = (1.0, 5.0, 15.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1200.0, 1800.0, 3600.0)
STEP_BUCKETS = (0.25, 0.5, 1.0, 2.0, 5.0, 10.0, 20.0, 30.0, 60.0, 120.0, 300.0, 600.0)
COUNTED_SESSION_FIELDS = frozenset(
    {"status", "step_count", "total_input_tokens", "total_output_tokens", "llm_cost_usd"}
)
"""The session fields whose change :meth:`ServiceMetrics.session_changed` counts (the rest it reads only on a
status change): the sessions' watcher for these alone."""


@dataclass
class StateSources:
    """Where the scrape-time gauges come from."""

    sessions_by_status: Callable[[], Awaitable[dict[str, int]]]
    pool_stats: Callable[[], PoolStats]
    webhooks_pending: Callable[[], Awaitable[int]]


@dataclass
class _Snapshot:
    sessions: dict[str, int] = field(default_factory=dict)
    pool: PoolStats | None = None
    webhooks_pending: int = 0


class _StateCollector(Collector):
    """Yields the gauges of the snapshot taken just before the scrape."""

    def __init__(self) -> None:
        self.snapshot = _Snapshot()

    def collect(self) -> Iterator[Metric]:
        snapshot = self.snapshot
        sessions = GaugeMetricFamily("openbrowse_sessions", "Sessions by status.", labels=["status"])
        for status in SessionStatus:
            sessions.add_metric([str(status)], snapshot.sessions.get(str(status), 0))
        yield sessions
        pool = snapshot.pool
        if pool is not None:
            yield GaugeMetricFamily(
                "openbrowse_queue_length", "Agent runs and raw browsers waiting for a display slot.", value=pool.queued
            )
            slots = GaugeMetricFamily("openbrowse_slots", "Display slots by state.", labels=["state"])
            for state, count in (("busy", pool.busy), ("parked", pool.parked), ("free", pool.free)):
                slots.add_metric([state], count)
            slots.add_metric(["spare"], pool.spares)
            yield slots
            yield GaugeMetricFamily("openbrowse_slots_max", "Display slots configured.", value=pool.size)
        yield GaugeMetricFamily(
            "openbrowse_webhooks_pending", "Webhook deliveries waiting in the outbox.", value=snapshot.webhooks_pending
        )


class ServiceMetrics:
    """Owns the registry; :meth:`render` is the body of ``GET /metrics``."""

    def __init__(self, sources: StateSources, *, monotonic: Callable[[], float] = time.monotonic) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self._monotonic = monotonic
        self._state = _StateCollector()
        self._sources = sources
        self._render_lock = asyncio.Lock()
        self._run_started: dict[str, float] = {}
        self._last_step: dict[str, float] = {}
        registry = self.registry
        registry.register(self._state)
        ProcessCollector(registry=registry)  # process_resident_memory_bytes, CPU seconds, open fds
        self.runs = Counter(
            "openbrowse_runs", "Agent runs ended, by the status they ended in.", ["status"], registry=registry
        )
        self.run_duration = Histogram(
            "openbrowse_run_duration_seconds",
            "Wall-clock time of one agent run.",
            buckets=RUN_BUCKETS,
            registry=registry,
        )
        self.step_duration = Histogram(
            "openbrowse_step_duration_seconds", "Time of one agent step.", buckets=STEP_BUCKETS, registry=registry
        )
        self.input_tokens = Counter("openbrowse_llm_input_tokens", "LLM input tokens.", ["model"], registry=registry)
        self.output_tokens = Counter("openbrowse_llm_output_tokens", "LLM output tokens.", ["model"], registry=registry)
        self.cost = Counter("openbrowse_llm_cost_usd", "LLM cost in US dollars.", ["model"], registry=registry)
        self.failures = Counter(
            "openbrowse_failures",
            "Runs that ended with a failure, by failureKind.",
            ["failure_kind"],
            registry=registry,
        )
        self.end_reasons = Counter(
            "openbrowse_end_reasons",
            "Sessions and raw browsers that ended, by endReason.",
            ["kind", "end_reason"],
            registry=registry,
        )
        self.webhook_deliveries = Counter(
            "openbrowse_webhook_deliveries",
            "Webhook deliveries settled: delivered, or failed for good.",
            ["event", "outcome"],
            registry=registry,
        )
        self.webhook_failures = Counter(
            "openbrowse_webhook_failures", "Failed webhook attempts, by reason.", ["event", "reason"], registry=registry
        )

    async def render(self) -> bytes:
        async with self._render_lock:  # one snapshot per scrape, never another scrape's
            sources = self._sources
            self._state.snapshot = _Snapshot(
                sessions=await sources.sessions_by_status(),
                pool=sources.pool_stats(),
                webhooks_pending=await sources.webhooks_pending(),
            )
            return generate_latest(self.registry)

    # -- events --------------------------------------------------------------------------------------------------
    def session_changed(self, before: SessionRecord, after: SessionRecord) -> None:
        """A committed session update (a ``SessionRepo`` watcher). Never raises: metrics must not break a run."""
        try:
            self._session_changed(before, after)
        except Exception:
            logger.exception("Could not update the metrics for session %s", after.id)

    def _session_changed(self, before: SessionRecord, after: SessionRecord) -> None:
        model, session_id, now = after.llm_model, after.id, self._monotonic()
        if after.total_input_tokens > before.total_input_tokens:
            self.input_tokens.labels(model).inc(after.total_input_tokens - before.total_input_tokens)
        if after.total_output_tokens > before.total_output_tokens:
            self.output_tokens.labels(model).inc(after.total_output_tokens - before.total_output_tokens)
        if after.llm_cost_usd > before.llm_cost_usd:
            self.cost.labels(model).inc(float(after.llm_cost_usd - before.llm_cost_usd))
        running_now = after.status is SessionStatus.RUNNING
        if running_now and before.status is not SessionStatus.RUNNING:
            self._run_started[session_id] = self._last_step[session_id] = now
        if after.step_count > before.step_count and session_id in self._last_step:
            steps = after.step_count - before.step_count
            for _ in range(steps):
                self.step_duration.observe((now - self._last_step[session_id]) / steps)
            self._last_step[session_id] = now
        if after.status is not before.status:
            self._status_changed(before, after, now)

    def _status_changed(self, before: SessionRecord, after: SessionRecord, now: float) -> None:
        if before.status is SessionStatus.RUNNING:
            self.runs.labels(str(after.status)).inc()
            started = self._run_started.pop(after.id, None)
            self._last_step.pop(after.id, None)
            if started is not None:
                self.run_duration.observe(now - started)
        if after.failure_kind is not None and after.status is not SessionStatus.RUNNING:
            self.failures.labels(str(after.failure_kind)).inc()
        if after.end_reason is not None and after.end_reason != before.end_reason:
            self.end_reasons.labels("session", str(after.end_reason)).inc()

    def browser_ended(self, record: BrowserRecord) -> None:
        end_reason = browser_end_reason(record.status, record.stop_reason)
        if end_reason is not None:
            self.end_reasons.labels("browser", str(end_reason)).inc()

    def webhook_result(self, event_type: str, outcome: str, reason: str) -> None:
        """A webhook attempt's outcome (``WebhookDelivery``'s ``on_result``)."""
        if outcome in ("delivered", "failed"):
            self.webhook_deliveries.labels(event_type, outcome).inc()
        if outcome in ("retry", "failed"):
            self.webhook_failures.labels(event_type, reason).inc()
