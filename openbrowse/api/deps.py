"""Typed access to app-wide services from route handlers, and the auth dependency.

Every dependency takes an ``HTTPConnection`` so it serves HTTP and WebSocket routes alike. Each one is an
``async def`` although none awaits: FastAPI runs a plain ``def`` dependency in its thread pool, two thread hops
per dependency and request, which under load cost more than everything else a ``GET`` does (issue 11).
"""

from __future__ import annotations

from typing import Annotated

import httpx
from fastapi import Depends
from starlette.requests import HTTPConnection

from openbrowse.api.auth import Authenticator
from openbrowse.config import Settings
from openbrowse.profiles.service import ProfileService
from openbrowse.sessions.activity import ActivityBoard
from openbrowse.sessions.browsers import BrowserService
from openbrowse.sessions.live import LiveTargets
from openbrowse.sessions.manager import SessionManager
from openbrowse.sessions.takeover import TakeoverTokens
from openbrowse.workspaces.service import WorkspaceService


async def get_settings(conn: HTTPConnection) -> Settings:
    settings: Settings = conn.app.state.settings
    return settings


async def get_manager(conn: HTTPConnection) -> SessionManager:
    manager: SessionManager = conn.app.state.manager
    return manager


def authenticator_of(conn: HTTPConnection) -> Authenticator:
    authenticator: Authenticator = conn.app.state.authenticator
    return authenticator


async def get_authenticator(conn: HTTPConnection) -> Authenticator:
    return authenticator_of(conn)


async def require_api_key(conn: HTTPConnection) -> None:
    authenticator_of(conn).require_api_key(conn)


async def get_browsers(conn: HTTPConnection) -> BrowserService:
    browsers: BrowserService = conn.app.state.browsers
    return browsers


async def get_live_targets(conn: HTTPConnection) -> LiveTargets:
    targets: LiveTargets = conn.app.state.live_targets
    return targets


def takeovers_of(conn: HTTPConnection) -> TakeoverTokens:
    takeovers: TakeoverTokens = conn.app.state.takeovers
    return takeovers


async def get_takeovers(conn: HTTPConnection) -> TakeoverTokens:
    return takeovers_of(conn)


async def get_profiles(conn: HTTPConnection) -> ProfileService:
    profiles: ProfileService = conn.app.state.profiles
    return profiles


async def get_workspaces(conn: HTTPConnection) -> WorkspaceService:
    workspaces: WorkspaceService = conn.app.state.workspaces
    return workspaces


async def get_loopback_http(conn: HTTPConnection) -> httpx.AsyncClient:
    """The HTTP client for loopback upstreams (noVNC assets, Chromium's ``/json/version``)."""
    client: httpx.AsyncClient = conn.app.state.loopback_http
    return client


async def get_activity_board(conn: HTTPConnection) -> ActivityBoard:
    board: ActivityBoard = conn.app.state.activity
    return board


SettingsDep = Annotated[Settings, Depends(get_settings)]
ManagerDep = Annotated[SessionManager, Depends(get_manager)]
AuthenticatorDep = Annotated[Authenticator, Depends(get_authenticator)]
ApiKey = Depends(require_api_key)
BrowsersDep = Annotated[BrowserService, Depends(get_browsers)]
LiveTargetsDep = Annotated[LiveTargets, Depends(get_live_targets)]
TakeoversDep = Annotated[TakeoverTokens, Depends(get_takeovers)]
ProfilesDep = Annotated[ProfileService, Depends(get_profiles)]
WorkspacesDep = Annotated[WorkspaceService, Depends(get_workspaces)]
LoopbackHttpDep = Annotated[httpx.AsyncClient, Depends(get_loopback_http)]
ActivityBoardDep = Annotated[ActivityBoard, Depends(get_activity_board)]
