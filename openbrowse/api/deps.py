"""Typed access to app-wide services from route handlers, and the auth dependency."""

from __future__ import annotations

from typing import Annotated

import httpx
from fastapi import Depends, Request
from starlette.requests import HTTPConnection

from openbrowse.api.auth import Authenticator
from openbrowse.config import Settings
from openbrowse.sessions.browsers import BrowserService
from openbrowse.sessions.live import LiveTargets
from openbrowse.sessions.manager import SessionManager


def get_settings(request: Request) -> Settings:
    settings: Settings = request.app.state.settings
    return settings


def get_manager(request: Request) -> SessionManager:
    manager: SessionManager = request.app.state.manager
    return manager


def get_authenticator(request: Request) -> Authenticator:
    authenticator: Authenticator = request.app.state.authenticator
    return authenticator


def require_api_key(request: Request) -> None:
    get_authenticator(request).require_api_key(request)


# Typed on HTTPConnection so they also serve WebSocket routes.
def connection_settings(conn: HTTPConnection) -> Settings:
    settings: Settings = conn.app.state.settings
    return settings


def connection_authenticator(conn: HTTPConnection) -> Authenticator:
    authenticator: Authenticator = conn.app.state.authenticator
    return authenticator


def get_browsers(conn: HTTPConnection) -> BrowserService:
    browsers: BrowserService = conn.app.state.browsers
    return browsers


def get_live_targets(conn: HTTPConnection) -> LiveTargets:
    targets: LiveTargets = conn.app.state.live_targets
    return targets


def get_loopback_http(conn: HTTPConnection) -> httpx.AsyncClient:
    """The HTTP client for loopback upstreams (noVNC assets, Chromium's ``/json/version``)."""
    client: httpx.AsyncClient = conn.app.state.loopback_http
    return client


SettingsDep = Annotated[Settings, Depends(get_settings)]
ManagerDep = Annotated[SessionManager, Depends(get_manager)]
ApiKey = Depends(require_api_key)
ConnSettingsDep = Annotated[Settings, Depends(connection_settings)]
ConnAuthenticatorDep = Annotated[Authenticator, Depends(connection_authenticator)]
BrowsersDep = Annotated[BrowserService, Depends(get_browsers)]
LiveTargetsDep = Annotated[LiveTargets, Depends(get_live_targets)]
LoopbackHttpDep = Annotated[httpx.AsyncClient, Depends(get_loopback_http)]
