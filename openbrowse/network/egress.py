"""The egress enforcer (spec §24.4): one slot's only way out, an HTTP proxy that applies the network policy.

Chromium (``--proxy-server``, ``--proxy-bypass-list=<-loopback>``) and the script host reach the web only
through it. For every request the host is normalised, resolved once, every answer checked by
:class:`~openbrowse.network.policy.NetworkRules`, and the connection made to a checked address only (pinned: the
name is never resolved again). ``CONNECT`` tunnels (HTTPS, WSS) and WebSocket upgrades are spliced both ways;
plain HTTP is forwarded one request per connection (``Connection: close`` both ways), because a browser reuses a
proxy connection for any host and a spliced keep-alive connection would carry the next request to the old one.

A refusal answers ``403`` with a short page and ``X-OpenBrowse-Refused: <rule>`` and is reported to the refusal
listeners; a name that does not resolve or an upstream that cannot be reached answers ``502``, a destination that
is not a valid host ``400`` (neither is a policy decision, so neither is reported). Heads are bounded and time
out, so nothing hangs. With an owner's upstream proxy (:attr:`EgressEnforcer.route`, spec §28.1) each checked
destination is reached through it, never directly. If the enforcer is not running, the slot has no way out at
all: its namespace has no route but this proxy.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import struct
from collections.abc import Callable, Iterable

from openbrowse.network.fd_budget import FD_BUDGET, FdBudget
from openbrowse.network.hosts import Endpoint, IPAddress, parse_authority, parse_target
from openbrowse.network.local import claim_service_port, release_service_port
from openbrowse.network.policy import NetworkRules
from openbrowse.network.proxy_protocol import (
    MAX_HEAD_BYTES,
    BadHead,
    RequestHead,
    forward_request_head,
    forward_response_head,
    parse_request,
    parse_response,
    read_head,
    simple_response,
)
from openbrowse.network.proxy_route import ProxyFailed, ProxyRoute
from openbrowse.network.refusal import NetworkRefused, Refusal
from openbrowse.network.splice import RoutedStats, TrafficStats, finish, relay, splice
from openbrowse.shielding import run_shielded

__all__ = ["EgressEnforcer", "Refusal", "RefusalListener", "TrafficStats"]

logger = logging.getLogger(__name__)

HEAD_TIMEOUT = 15.0
"""A client that has not finished its request head by then is answered 408 and dropped."""
CONNECT_TIMEOUT = 10.0
RESPONSE_HEAD_TIMEOUT = 120.0
MAX_CONNECTIONS = 256
"""Open client connections per enforcer; more are answered 503 and closed at once, before they take anything of
the process's descriptor budget (:mod:`.fd_budget`): one slot's flood leaves the others their share."""
CONNECTION_FDS = 2
"""What one client connection may hold of the process's descriptor budget: itself and its upstream."""

LINGER_SECONDS = 2.0
LINGER_BYTES = 1024 * 1024

RefusalListener = Callable[[Refusal], None]


class UpstreamUnreachable(Exception):
    """No checked address of the destination accepted a connection in time."""


def _peer_uid(writer: asyncio.StreamWriter) -> int | None:
    """The uid of the process that connected to a Unix socket (``SO_PEERCRED``), or None when unknown."""
    sock = writer.get_extra_info("socket")
    if sock is None or sock.family != socket.AF_UNIX:
        return None
    try:
        _, uid, _ = struct.unpack("3i", sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i")))
    except OSError:
        return None
    return int(uid)


async def _lingering_close(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Half-close, then drop what the client still sends for a moment before closing: closing a socket with
    unread input resets it, and the reset can destroy the answer the client has not read yet."""
    try:
        if writer.can_write_eof() and not writer.is_closing():
            writer.write_eof()
        discarded = 0
        async with asyncio.timeout(LINGER_SECONDS):
            while discarded < LINGER_BYTES and (chunk := await reader.read(65536)):
                discarded += len(chunk)
    except (ConnectionError, TimeoutError, OSError):
        pass
    finally:
        writer.close()


class EgressEnforcer:
    """An asyncio HTTP proxy for one slot. ``await start()``, then ``listen_unix``/``listen_tcp``; ``aclose()``.

    ``rules`` may be replaced while running (it is read per request). ``exempt_urls`` are absolute ``http://``
    URLs that a plain ``GET`` may fetch whatever the rules say (the service's own code tab page); nothing else
    on their host and port is opened by them.
    """

    def __init__(
        self,
        rules: NetworkRules,
        *,
        label: str = "egress",
        exempt_urls: Iterable[str] = (),
        max_connections: int = MAX_CONNECTIONS,
        budget: FdBudget = FD_BUDGET,
    ) -> None:
        self.rules = rules
        self.label = label
        self.stats = TrafficStats()
        self._exempt = frozenset(exempt_urls)
        self._max_connections = max_connections
        self._budget = budget
        self._listeners: list[RefusalListener] = []
        self._servers: list[asyncio.Server] = []
        self._tasks: set[asyncio.Task[None]] = set()
        self._tcp_ports: list[int] = []
        self.route: ProxyRoute | None = None
        """The owner's upstream proxy (spec §28.1): every connection goes through it, none directly."""
        self._started = False
        self._closed = False

    # -- lifecycle ------------------------------------------------------------------------------------------
    @property
    def running(self) -> bool:
        return self._started and not self._closed

    @property
    def tcp_ports(self) -> tuple[int, ...]:
        return tuple(self._tcp_ports)

    async def start(self) -> None:
        """Ready to listen (idempotent). The enforcer serves nothing until a ``listen_*`` call."""
        if self._closed:
            raise RuntimeError(f"{self.label} egress enforcer was closed")
        self._started = True

    async def listen_unix(self, sock: socket.socket, *, peer_uid: int | None = None) -> None:
        """Serve on a bound Unix socket (its owner made it where only the slot can reach it: the seam directory,
        :mod:`openbrowse.slots.seam`). With ``peer_uid``, a connection from any other uid (``SO_PEERCRED``) is
        closed unanswered. The enforcer owns ``sock`` from here on; whoever bound it removes the file."""
        await self.start()

        def accept(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            if peer_uid is not None and (uid := _peer_uid(writer)) != peer_uid:
                self.stats.refused_peers += 1
                if self.stats.refused_peers == 1 or self.stats.refused_peers % 100 == 0:  # a flood floods no log
                    logger.warning(
                        "%s refused a connection from uid %s (only uid %d may use it; %d refused)",
                        self.label,
                        uid,
                        peer_uid,
                        self.stats.refused_peers,
                    )
                writer.transport.abort()
                return
            self._accept(reader, writer)

        try:
            server = await asyncio.start_unix_server(accept, sock=sock, limit=MAX_HEAD_BYTES)
        except BaseException:
            sock.close()
            raise
        self._servers.append(server)

    async def listen_tcp(self, host: str = "127.0.0.1") -> int:
        """Serve on ``host`` at an ephemeral port and return it (for slots run unsandboxed)."""
        await self.start()
        server = await asyncio.start_server(self._accept, host, 0, limit=MAX_HEAD_BYTES)
        port = int(server.sockets[0].getsockname()[1])
        claim_service_port(port)  # no proxy is ever asked to reach itself or another enforcer
        self._servers.append(server)
        self._tcp_ports.append(port)
        return port

    async def aclose(self) -> None:
        """Stop listening and close every open connection and tunnel (shielded; idempotent)."""
        await run_shielded(self._close())

    async def _close(self) -> None:
        if self._closed:
            return
        self._closed = True
        for server in self._servers:
            server.close()
        while self._tasks:
            tasks = list(self._tasks)
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            self._tasks.difference_update(tasks)
        for server in self._servers:
            await server.wait_closed()
        for port in self._tcp_ports:
            release_service_port(port)

    async def __aenter__(self) -> EgressEnforcer:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    def use_route(self, route: ProxyRoute | None) -> None:
        """Send every new connection through ``route`` (or directly, under the policy, with None). Connections
        opened before are closed: none made for a spare or a previous holder goes on the old way."""
        self.route = route
        for task in list(self._tasks):
            task.cancel()

    # -- refusal listeners ----------------------------------------------------------------------------------
    def add_refusal_listener(self, listener: RefusalListener) -> Callable[[], None]:
        """Call ``listener(refusal)`` on every refusal (on the enforcer's loop); returns the remover."""
        self._listeners.append(listener)

        def remove() -> None:
            with contextlib.suppress(ValueError):
                self._listeners.remove(listener)

        return remove

    def _report(self, refused: NetworkRefused) -> None:
        self.stats.refused += 1
        refusal = refused.as_refusal()
        logger.info("%s refused %s:%s (%s): %s", self.label, refusal.host, refusal.port, refusal.rule, refusal.reason)
        for listener in list(self._listeners):
            try:
                listener(refusal)
            except Exception:
                logger.exception("%s refusal listener failed", self.label)

    # -- one client connection ------------------------------------------------------------------------------
    def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """A plain callback, so the connection's task is ours alone (asyncio never inspects how it ended)."""
        if self._closed:
            writer.transport.abort()
            return
        if len(self._tasks) >= self._max_connections:
            # answered and closed at once, holding nothing: a flood costs this slot its own connections only
            self.stats.connections += 1
            writer.write(simple_response(503, "Too many open connections through this proxy."))
            writer.close()
            return
        if not self._budget.try_acquire(CONNECTION_FDS, f"{self.label} egress"):
            writer.transport.abort()
            return
        task = asyncio.get_running_loop().create_task(self._serve(reader, writer), name=f"{self.label}-conn")
        self._tasks.add(task)
        task.add_done_callback(self._done)

    def _done(self, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        self._budget.release(CONNECTION_FDS)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.stats.connections += 1
        clean = False
        try:
            await self._handle(reader, writer)
            clean = True
        except (ConnectionError, TimeoutError):
            pass
        except Exception:
            logger.exception("%s connection failed", self.label)
        finally:
            if clean:
                await _lingering_close(reader, writer)
            else:
                writer.transport.abort()

    async def _answer(self, writer: asyncio.StreamWriter, response: bytes) -> None:
        writer.write(response)
        async with asyncio.timeout(HEAD_TIMEOUT):
            await writer.drain()

    async def _refuse(self, writer: asyncio.StreamWriter, refused: NetworkRefused) -> None:
        self._report(refused)
        text = f"Blocked by OpenBrowse network policy: {refused.reason}"
        await self._answer(writer, simple_response(403, text, (("X-OpenBrowse-Refused", refused.rule),)))

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            async with asyncio.timeout(HEAD_TIMEOUT):
                head = await read_head(reader)
            if head is None:
                return
            request = parse_request(head)
        except TimeoutError:
            await self._answer(writer, simple_response(408, "The request head did not arrive in time."))
            return
        except BadHead as bad:
            await self._answer(writer, simple_response(bad.status, bad.message))
            return
        try:
            if request.method == "CONNECT":
                await self._tunnel(request, reader, writer)
            else:
                await self._forward(request, reader, writer)
        except NetworkRefused as refused:
            if refused.rule == "invalid_target":
                await self._answer(writer, simple_response(400, refused.reason))
            elif refused.rule == "unresolvable":  # a DNS failure, not a policy decision: no feed event
                await self._answer(writer, simple_response(502, refused.reason))
            else:
                await self._refuse(writer, refused)
        except (UpstreamUnreachable, ProxyFailed) as exc:
            await self._answer(writer, simple_response(502, str(exc)))

    async def _connect(
        self, endpoint: Endpoint, addresses: list[IPAddress]
    ) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        """Connect to the first checked address that answers; never resolves the name again. With a route, through
        its upstream proxy to the first checked address (ProxyFailed, never a direct connection, if that fails)."""
        if self.route is not None:
            return await self.route.open(self.rules, addresses, endpoint.port, timeout=CONNECT_TIMEOUT)
        errors: list[str] = []
        try:
            async with asyncio.timeout(CONNECT_TIMEOUT):
                for address in addresses:
                    try:
                        return await asyncio.open_connection(str(address), endpoint.port, limit=MAX_HEAD_BYTES)
                    except OSError as exc:
                        errors.append(f"{address}: {exc.strerror or exc}")
        except TimeoutError:
            errors.append(f"no answer within {CONNECT_TIMEOUT:.0f} s")
        raise UpstreamUnreachable(f"Could not connect to {endpoint} ({'; '.join(errors) or 'no address'}).")

    async def _tunnel(self, request: RequestHead, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        endpoint = parse_authority(request.target)
        addresses = await self.rules.check_endpoint(endpoint)
        up_reader, up_writer = await self._connect(endpoint, addresses)
        try:
            writer.write(b"HTTP/1.1 200 Connection Established\r\n\r\n")
            await writer.drain()
            await splice((reader, writer), (up_reader, up_writer), self._counter())
        finally:
            up_writer.transport.abort()

    async def _forward(self, request: RequestHead, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if not request.target.lower().startswith("http://"):
            message = "This proxy forwards absolute http:// requests only; https goes through CONNECT."
            await self._answer(writer, simple_response(400, message))
            return
        target = parse_target(request.target)
        exempt = request.method == "GET" and not request.wants_upgrade and request.target in self._exempt
        if exempt:
            endpoint = target.endpoint
            addresses = [target.ip] if target.ip else await self.rules.resolver(endpoint.host, endpoint.port)
        else:
            addresses = await self.rules.check_endpoint(target.endpoint)
        up_reader, up_writer = await self._connect(target.endpoint, addresses)
        sending: asyncio.Task[None] | None = None
        counter = self._counter()
        try:
            forwarded = forward_request_head(request, target)
            up_writer.write(forwarded)
            counter.add_sent(len(forwarded))
            sending = asyncio.create_task(relay(reader, up_writer, counter.add_sent))
            if await self._pass_response_head(up_reader, writer, counter):
                await relay(up_reader, writer, counter.add_received)
        finally:
            if sending is not None:
                await finish(sending)
            up_writer.transport.abort()

    def _counter(self) -> TrafficStats | RoutedStats:
        return self.stats if self.route is None else RoutedStats(self.stats, self.route.add_bytes)

    async def _pass_response_head(
        self, up_reader: asyncio.StreamReader, writer: asyncio.StreamWriter, counter: TrafficStats | RoutedStats
    ) -> bool:
        """Copy interim heads as they are and the final one rewritten; False (after a 502/504) when none came."""
        try:
            async with asyncio.timeout(RESPONSE_HEAD_TIMEOUT):
                while True:
                    raw = await read_head(up_reader)
                    if raw is None:
                        raise BadHead(502, "The upstream server closed the connection without an answer.")
                    counter.add_received(len(raw))
                    response = parse_response(raw)
                    writer.write(forward_response_head(response, raw))
                    await writer.drain()
                    if response.status >= 200 or response.status == 101:
                        return True
        except TimeoutError:
            await self._answer(writer, simple_response(504, "The upstream server did not answer in time."))
        except BadHead as bad:
            await self._answer(
                writer, simple_response(502, f"The upstream server's answer is not valid: {bad.message}")
            )
        return False
