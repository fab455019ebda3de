"""WebhookDelivery: sends the webhook outbox's rows, at least once, with backoff, under the network policy.

One background task, owned by the app's lifespan, reads due rows from :class:`~openbrowse.store.outbox.WebhookOutbox`
and POSTs each to its target. A 2xx settles the row; anything else (an error status, a timeout, a refused
connection) is retried after ``WEBHOOK_RETRY_BASE_S`` doubling up to ``WEBHOOK_RETRY_MAX_S``, until
``WEBHOOK_RETRY_FOR_S`` after the event, then recorded as failed. A target the network policy refuses (spec §19.2:
the always-refused set applies in every policy) fails at once: retrying cannot change the answer.

Each attempt resolves the target once, checks every address, and connects to a checked address (the name rides in
``Host`` and TLS SNI), so a DNS answer that changes between check and connect cannot slip through. Redirects are
not followed. Nothing here ever touches a run: a receiver that is down, slow or failing only delays its own rows.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import defaultdict
from collections.abc import Callable
from types import TracebackType

import httpx

from openbrowse import __version__
from openbrowse.config import Settings
from openbrowse.domain.webhooks import EVENT_ID_HEADER, retry_delay, signed_headers
from openbrowse.network.policy import IPAddress, NetworkRefused, NetworkRules, Target, url_for
from openbrowse.shielding import run_shielded
from openbrowse.store.outbox import OutboxRow, WebhookOutbox

logger = logging.getLogger(__name__)

BATCH = 100
CONCURRENT_TARGETS = 4
IDLE_POLL_S = 30.0
"""Longest sleep without a wake-up: a safety net, since every committed change wakes the worker."""
ERROR_PAUSE_S = 1.0
SETTLED_KEPT_S = 7 * 86_400.0
"""Delivered and failed rows are kept a week (for inspection), then pruned at start-up."""

OnResult = Callable[[str, str, str], None]
"""``on_result(event_type, outcome, reason)``; outcome is ``delivered``, ``retry`` or ``failed``."""


class _AttemptFailed(Exception):
    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


class WebhookDelivery:
    """The delivery worker: an async context manager whose exit stops it (pending rows wait for the next start)."""

    def __init__(
        self,
        outbox: WebhookOutbox,
        settings: Settings,
        rules: NetworkRules,
        *,
        on_result: OnResult | None = None,
        epoch: Callable[[], float] = time.time,
    ) -> None:
        self._outbox = outbox
        self._settings = settings
        self._rules = rules
        self._on_result = on_result or (lambda _type, _outcome, _reason: None)
        self._epoch = epoch
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._client: httpx.AsyncClient | None = None

    async def __aenter__(self) -> WebhookDelivery:
        if self._settings.WEBHOOK_URL and not self._settings.WEBHOOK_SECRET:
            logger.warning("WEBHOOK_URL is set without WEBHOOK_SECRET: webhooks go out unsigned.")
        self._client = httpx.AsyncClient(
            timeout=self._settings.WEBHOOK_TIMEOUT_S, trust_env=False, follow_redirects=False, verify=True
        )
        self._task = asyncio.create_task(self._run(), name="webhook-delivery")
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await run_shielded(self._close())

    async def _close(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        client, self._client = self._client, None
        if client is not None:
            await client.aclose()

    def wake(self) -> None:
        """Something may have been written to the outbox: look now (called after every committed change)."""
        self._wake.set()

    async def _run(self) -> None:
        with contextlib.suppress(Exception):
            await self._outbox.prune(self._epoch() - SETTLED_KEPT_S)
        while True:
            self._wake.clear()
            try:
                rows = await self._outbox.due(self._epoch(), BATCH)
                if rows:
                    await self._deliver(rows)
                    continue
                next_due = await self._outbox.next_due()
            except Exception:
                logger.exception("Webhook delivery failed; trying again shortly")
                await asyncio.sleep(ERROR_PAUSE_S)
                continue
            wait = IDLE_POLL_S if next_due is None else min(max(next_due - self._epoch(), 0.0), IDLE_POLL_S)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), wait)

    async def _deliver(self, rows: list[OutboxRow]) -> None:
        """Each target's rows in order, a few targets at once, so one slow receiver does not hold up the others."""
        by_target: dict[str, list[OutboxRow]] = defaultdict(list)
        for row in rows:
            by_target[row.target_url].append(row)
        gate = asyncio.Semaphore(CONCURRENT_TARGETS)

        async def one_target(target_rows: list[OutboxRow]) -> None:
            async with gate:
                for row in target_rows:
                    await self._attempt(row)

        async with asyncio.TaskGroup() as group:
            for target_rows in by_target.values():
                group.create_task(one_target(target_rows))

    async def _attempt(self, row: OutboxRow) -> None:
        attempts = row.attempts + 1
        try:
            target, addresses = await self._rules.check(row.target_url)
        except NetworkRefused as exc:
            if exc.rule != "unresolvable":
                logger.warning("Webhook %s to %s refused for good: %s", row.event_id, exc.host, exc.reason)
                await self._outbox.failed(row.seq, attempts, str(exc))
                self._on_result(row.event_type, "failed", "refused")
                return
            await self._retry_or_give_up(row, attempts, _AttemptFailed("unresolvable", str(exc)))
            return
        try:
            await self._post(target, addresses, row)
        except _AttemptFailed as failure:
            await self._retry_or_give_up(row, attempts, failure)
            return
        await self._outbox.delivered(row.seq, attempts)
        self._on_result(row.event_type, "delivered", "")

    async def _retry_or_give_up(self, row: OutboxRow, attempts: int, failure: _AttemptFailed) -> None:
        settings = self._settings
        now = self._epoch()
        when = now + retry_delay(attempts, settings.WEBHOOK_RETRY_BASE_S, settings.WEBHOOK_RETRY_MAX_S)
        if when - row.created_at > settings.WEBHOOK_RETRY_FOR_S:
            logger.warning("Webhook %s gave up after %d attempts: %s", row.event_id, attempts, failure)
            await self._outbox.failed(row.seq, attempts, f"gave up after {attempts} attempts: {failure}")
            self._on_result(row.event_type, "failed", failure.reason)
            return
        logger.info("Webhook %s attempt %d failed (%s); next in %.1f s", row.event_id, attempts, failure, when - now)
        await self._outbox.retry_at(row.seq, attempts, when, str(failure))
        self._on_result(row.event_type, "retry", failure.reason)

    async def _post(self, target: Target, addresses: list[IPAddress], row: OutboxRow) -> None:
        """POST the row's body to the first checked address that accepts a connection; raise on anything but 2xx."""
        client = self._client
        if client is None:
            raise _AttemptFailed("closed", "the delivery worker is closed")
        headers = {
            "content-type": "application/json",
            "user-agent": f"OpenBrowse-Webhooks/{__version__}",
            "host": target.authority,
            EVENT_ID_HEADER: row.event_id,
            **signed_headers(self._settings.WEBHOOK_SECRET, int(self._epoch()), row.body),
        }
        last_error: Exception | None = None
        for address in addresses:
            request = client.build_request(
                "POST",
                url_for(target, address),
                headers=headers,
                content=row.body.encode(),
                extensions={"sni_hostname": target.host},
            )
            try:
                response = await client.send(request)
            except httpx.ConnectError as exc:
                last_error = exc
                continue
            except httpx.TimeoutException as exc:
                raise _AttemptFailed("timeout", f"{target.host} did not answer in time") from exc
            except httpx.HTTPError as exc:
                raise _AttemptFailed("transport", f"{target.host}: {exc or type(exc).__name__}") from exc
            if 200 <= response.status_code < 300:
                return
            raise _AttemptFailed("status", f"{target.host} answered {response.status_code}")
        raise _AttemptFailed("connect", f"could not connect to {target.host}: {last_error}")
