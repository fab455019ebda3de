"""Running the app under uvicorn, with the start-up lines a user needs to see."""

from __future__ import annotations

import asyncio
import logging
import signal
import socket
from types import FrameType

import uvicorn

from openbrowse.api.auth import UNGUESSABLE_KEY_CHARS
from openbrowse.api.routes.live import VNC_MAX_MESSAGE
from openbrowse.app import create_app
from openbrowse.config import Settings, is_loopback
from openbrowse.sessions.maintenance import Maintenance
from openbrowse.store.db import Database
from openbrowse.store.target import store_target

logger = logging.getLogger("openbrowse")


def ws_max_size(settings: Settings) -> int:
    """Largest WebSocket message uvicorn reads for any route: the largest route limit (the CDP route's,
    ``CDP_MAX_FRAME_FROM_CLIENT_MB``). Each route applies its own, smaller or equal, limit
    (``bridge(max_message=…)``)."""
    return max(VNC_MAX_MESSAGE, settings.CDP_MAX_FRAME_FROM_CLIENT_MB << 20)


class DrainingServer(uvicorn.Server):
    """uvicorn, except that a first SIGTERM drains for maintenance (spec §21.6) while requests are still served,
    and only then shuts down as uvicorn does. SIGINT, or a second signal during the drain, stops at once."""

    def __init__(self, config: uvicorn.Config, maintenance: Maintenance) -> None:
        super().__init__(config)
        self._maintenance = maintenance
        self._loop: asyncio.AbstractEventLoop | None = None
        self._draining = False

    async def serve(self, sockets: list[socket.socket] | None = None) -> None:
        self._loop = asyncio.get_running_loop()
        await super().serve(sockets)

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        if sig == signal.SIGTERM and not self._draining and not self.should_exit and self._loop is not None:
            self._draining = True
            logger.info("SIGTERM: draining for maintenance (another SIGTERM or SIGINT stops at once)")
            self._loop.call_soon_threadsafe(self._maintenance.begin, self._drained)
            return
        super().handle_exit(sig, frame)

    def _drained(self) -> None:
        if not self.should_exit:
            super().handle_exit(signal.SIGTERM, None)  # uvicorn's own shutdown from here, exit status included


async def probe_store(settings: Settings) -> None:
    """Open the database once (and migrate it) before serving; StoreUnavailable or ConfigError if it cannot be."""
    async with Database(store_target(settings), pool_size=1) as db:
        logger.info("Store: %s", db.target.describe())


def serve(settings: Settings) -> None:
    if not settings.auth_enabled:
        if settings.ALLOW_INSECURE_NO_AUTH:
            logger.warning("ALLOW_INSECURE_NO_AUTH is set: every request is served without authentication.")
        elif is_loopback(settings.HOST):
            logger.info(
                "API_KEY is not set: serving without authentication because HOST=%s is a loopback address.",
                settings.HOST,
            )
    if settings.auth_enabled and len(settings.API_KEY or "") < UNGUESSABLE_KEY_CHARS:
        logger.warning(
            "API_KEY is shorter than %d characters: it stays behind the failed-attempt throttle, so a guesser sharing "
            "an address with its holder (behind one proxy) can lock them out; use a random key (openssl rand -hex 16).",
            UNGUESSABLE_KEY_CHARS,
        )
    if settings.auth_enabled and not settings.dashboard_password:
        logger.info(
            "DASHBOARD_PASSWORD is not set: the dashboard's login form and HTTP Basic are off "
            "(its pages take the API key header only)."
        )
    asyncio.run(probe_store(settings))  # a database that is down: one sentence and exit 2, not a traceback
    app = create_app(settings)
    config = uvicorn.Config(
        app,
        host=settings.HOST,
        port=settings.PORT,
        log_config=None,
        access_log=False,
        lifespan="on",
        timeout_graceful_shutdown=30,
        ws="websockets-sansio",
        ws_max_size=ws_max_size(settings),
        ws_per_message_deflate=False,
        proxy_headers=True,
        forwarded_allow_ips=settings.FORWARDED_ALLOW_IPS or [],  # uvicorn alone would trust 127.0.0.1
    )
    DrainingServer(config, app.state.maintenance).run()
