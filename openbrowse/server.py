"""Running the app under uvicorn, with the start-up lines a user needs to see."""

from __future__ import annotations

import logging

import uvicorn

from openbrowse.app import create_app
from openbrowse.config import Settings, is_loopback

logger = logging.getLogger("openbrowse")

WS_MAX_SIZE = 256 * 1024 * 1024
"""Largest WebSocket message a client may send (uvicorn's default is 16 MiB). CDP clients proxied through
``/v3/browsers/{id}/cdp`` send messages of tens of MB (e.g. ``Runtime.evaluate`` of a bundled script)."""


def serve(settings: Settings) -> None:
    if not settings.auth_enabled:
        if settings.ALLOW_INSECURE_NO_AUTH:
            logger.warning("ALLOW_INSECURE_NO_AUTH is set: every request is served without authentication.")
        elif is_loopback(settings.HOST):
            logger.info(
                "API_KEY is not set: serving without authentication because HOST=%s is a loopback address.",
                settings.HOST,
            )
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
        ws_max_size=WS_MAX_SIZE,
        ws_per_message_deflate=False,
    )
    uvicorn.Server(config).run()
