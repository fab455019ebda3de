"""The full route table of the control API: importing each serving module registers its routes (spec §20.2)."""

from __future__ import annotations

import importlib

from openbrowse.control.call import ROUTES, ControlRoute

__all__ = ["SERVING_MODULES", "all_routes"]

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
