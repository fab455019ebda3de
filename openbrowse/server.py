"""Running the app under uvicorn, with the start-up lines a user needs to see."""

from __future__ import annotations

import logging

import uvicorn

from openbrowse.api.routes.browsers import CDP_MAX_MESSAGE
from openbrowse.app import create_app
from openbrowse.config import Settings, is_loopback

logger = logging.getLogger("openbrowse")

WS_MAX_SIZE = CDP_MAX_MESSAGE
"""Largest WebSocket message uvicorn reads for any route (its default is 16 MiB): the CDP route's limit, the
largest. Each route applies its own, smaller or equal, limit (``bridge(max_message=…)``)."""


def serve(settings: Settings) -> None:
    if not settings.auth_enabled:
        if settings.ALLOW_INSECURE_NO_AUTH:
            logger.warning("ALLOW_INSECURE_NO_AUTH is set: every request is served without authentication.")
        elif is_loopback(settings.HOST):
            logger.info(
                "API_KEY is not set: serving without authentication because HOST=%s is a loopback address.",
                settings.HOST,
            )
    if settings.auth_enabled and not settings.dashboard_password:
        logger.info(
            "DASHBOARD_PASSWORD is not set: the dashboard's login form and HTTP Basic are off "
            "(its pages take the API key header only)."
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
        proxy_headers=True,
        forwarded_allow_ips=settings.FORWARDED_ALLOW_IPS or [],  # uvicorn alone would trust 127.0.0.1
    )
    uvicorn.Server(config).run()
