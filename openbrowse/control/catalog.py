"""The full route table of the control API: importing each serving module registers its routes (spec §20.2)."""

from __future__ import annotations

import importlib

from openbrowse.control.call import ROUTES, ControlRoute, Method

__all__ = ["SERVING_MODULES", "all_routes", "loaded_route", "route_for"]

SERVING_MODULES = (
    "openbrowse.control.tabs",
    "openbrowse.control.snapshot",
    "openbrowse.control.act",
    "openbrowse.control.observe",
    "openbrowse.control.state",
    "openbrowse.control.files",
    "openbrowse.control.extract",
)


def all_routes() -> list[ControlRoute]:
    """Every registered route, each (method, path) once."""
    for name in SERVING_MODULES:
        importlib.import_module(name)
    seen: set[tuple[str, str]] = set()
    routes = []
    for route in ROUTES:
        key = (route.method, route.path)
        if key not in seen:
            seen.add(key)
            routes.append(route)
    return routes


_BY_KEY: dict[tuple[str, str], ControlRoute] = {}


def route_for(method: Method, path: str) -> ControlRoute:
    """The route serving ``method path`` (a pair of :data:`~openbrowse.control.paths.ROUTE_PATHS`); the first call
    imports the serving modules, and Playwright with them (blocking: call it on a thread)."""
    if not _BY_KEY:
        _BY_KEY.update({(route.method, route.path): route for route in all_routes()})
    return _BY_KEY[(method, path)]


def loaded_route(method: Method, path: str) -> ControlRoute | None:
    """The route when the serving modules are loaded already, else None (no import on the event loop)."""
    return _BY_KEY.get((method, path))
