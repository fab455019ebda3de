"""Copying bytes between two stream pairs, with backpressure, half-close and byte counts."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from dataclasses import dataclass

CHUNK = 64 * 1024
LINGER_SECONDS = 30.0
"""How long a tunnel stays open for the upstream's answer after the client has half-closed its side."""


@dataclass(slots=True)
class TrafficStats:
    """Counters of one enforcer (cheap, approximate under concurrency only by scheduling order)."""

    connections: int = 0
    refused: int = 0
    refused_peers: int = 0
    """Connections closed unanswered because they came from another uid than the slot's."""
    bytes_sent: int = 0
    bytes_received: int = 0

    def add_sent(self, count: int) -> None:
        self.bytes_sent += count

    def add_received(self, count: int) -> None:
        self.bytes_received += count


@dataclass(slots=True)
class RoutedStats:
    """An enforcer's counters plus its upstream proxy's byte meter (spec §28.1 ``proxyUsedMb``)."""

    stats: TrafficStats
    meter: Callable[[int], None]

    def add_sent(self, count: int) -> None:
        self.stats.add_sent(count)
        self.meter(count)

    def add_received(self, count: int) -> None:
        self.stats.add_received(count)
        self.meter(count)


async def relay(source: asyncio.StreamReader, sink: asyncio.StreamWriter, count: Callable[[int], None]) -> None:
    """Copy until ``source`` ends, then half-close ``sink``; a peer that resets ends it quietly."""
    with contextlib.suppress(ConnectionError):
        while chunk := await source.read(CHUNK):
            sink.write(chunk)
            count(len(chunk))
            await sink.drain()
        if sink.can_write_eof() and not sink.is_closing():
            sink.write_eof()


async def finish(task: asyncio.Task[None]) -> None:
    """Cancel ``task`` and wait for it, swallowing what it raised (its owner is going away)."""
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError, Exception):
        await task


async def splice(
    client: tuple[asyncio.StreamReader, asyncio.StreamWriter],
    upstream: tuple[asyncio.StreamReader, asyncio.StreamWriter],
    stats: TrafficStats | RoutedStats,
    *,
    linger: float = LINGER_SECONDS,
) -> None:
    """Both ways until the upstream's side ends (or the client's, plus ``linger`` for the upstream to finish)."""
    sending = asyncio.create_task(relay(client[0], upstream[1], stats.add_sent))
    receiving = asyncio.create_task(relay(upstream[0], client[1], stats.add_received))
    try:
        done, _ = await asyncio.wait({sending, receiving}, return_when=asyncio.FIRST_COMPLETED)
        if receiving not in done:
            await asyncio.wait({receiving}, timeout=linger)
    finally:
        await finish(sending)
        await finish(receiving)
