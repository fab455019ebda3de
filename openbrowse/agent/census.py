"""A census of the heavy per-run objects still alive: browser-use agents, their tools and browser sessions.

A finished run must leave none of them behind (each holds megabytes of dynamic models and registries).
``/health/details`` reports the counts; a count that grows with every finished session is a leak. This module
imports nothing heavy, so the API can read it before browser-use is loaded.
"""

from __future__ import annotations

import weakref
from typing import Literal

Kind = Literal["agents", "tools", "browserSessions"]

# id -> weak reference; browser-use's pydantic objects are not hashable, so no WeakSet
_live: dict[Kind, dict[int, weakref.ref[object]]] = {"agents": {}, "tools": {}, "browserSessions": {}}


def track(kind: Kind, obj: object) -> None:
    key = id(obj)
    objects = _live[kind]

    def gone(ref: weakref.ref[object]) -> None:
        if objects.get(key) is ref:
            del objects[key]

    objects[key] = weakref.ref(obj, gone)


def live_counts() -> dict[str, int]:
    return {kind: len(objects) for kind, objects in _live.items()}
