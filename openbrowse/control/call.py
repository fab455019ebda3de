"""ControlCall and the route table: one entry per route of spec §20.2, registered by the module that serves it.

A handler takes a :class:`ControlCall` (the engine, the query, the JSON body, the path parameters) and returns the
200 body as a dict, or raises :class:`~openbrowse.control.errors.ControlError`. The API layer mounts every entry of
:data:`ROUTES` under both ``/v3/sessions/{id}/browser`` and ``/v3/browsers/{id}/browser``; the server side decides,
from ``mutating``, who may call it (spec §20.3).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from openbrowse.control.errors import act_invalid
from openbrowse.control.target import FileUrl

if TYPE_CHECKING:
    from openbrowse.control.engine import ControlEngine

__all__ = ["ROUTES", "ControlCall", "ControlRoute", "Handler", "route"]

Method = Literal["GET", "POST", "DELETE"]


@dataclass(slots=True)
class ControlCall:
    engine: ControlEngine
    query: Mapping[str, str] = field(default_factory=dict)
    body: dict[str, Any] = field(default_factory=dict)
    path: Mapping[str, str] = field(default_factory=dict)
    signed_url: FileUrl | None = None
    """A signed files URL for this caller (it asked for URLs, or holds only the browser's own token, which the
    files route does not take); None answers the target's plain files route."""

    def file_url(self, area: str, name: str) -> str:
        """The URL to answer for ``<area>/<name>`` of the target's file area (spec §22.3)."""
        if self.signed_url is not None:
            return self.signed_url(area, name)
        return self.engine.target.file_url(area, name)

    def arg(self, name: str) -> Any:
        """A field from the body, else from the query string (the reference client mixes both)."""
        if name in self.body:
            return self.body[name]
        return self.query.get(name)

    def text(self, name: str, *, required: bool = False) -> str | None:
        value = self.arg(name)
        if value is None or value == "":
            if required:
                raise act_invalid(f"{name} is required")
            return None
        if not isinstance(value, str):
            raise act_invalid(f"{name} must be a string")
        return value

    def number(self, name: str, default: float | None = None) -> float | None:
        value = self.arg(name)
        if value is None or value == "":
            return default
        if isinstance(value, bool) or (isinstance(value, str) and not value.isascii()):
            # float() reads other scripts' digits ("٣" is 3.0): a number in a URL is written with 0-9 only
            raise act_invalid(f"{name} must be a number")
        try:
            return float(value)
        except (TypeError, ValueError) as exc:
            raise act_invalid(f"{name} must be a number") from exc

    def flag(self, name: str, default: bool = False) -> bool:
        value = self.arg(name)
        if value is None or value == "":
            return default
        if isinstance(value, bool):
            return value
        return str(value).lower() in {"1", "true", "yes", "on"}

    @property
    def target_id(self) -> str | None:
        return self.text("targetId")


Handler = Callable[[ControlCall], Awaitable[dict[str, Any]]]


@dataclass(frozen=True, slots=True)
class ControlRoute:
    method: Method
    path: str
    """Under the base, FastAPI style: ``/tabs``, ``/tabs/{target_id}``, ``/storage/{kind}/set``."""
    handler: Handler
    mutating: bool
    summary: str


ROUTES: list[ControlRoute] = []


def route(method: Method, path: str, *, mutating: bool) -> Callable[[Handler], Handler]:
    """Register ``handler`` for ``method path`` (its docstring's first line is the route's summary)."""

    def register(handler: Handler) -> Handler:
        summary = (handler.__doc__ or path).strip().splitlines()[0]
        ROUTES.append(ControlRoute(method, path, handler, mutating, summary))
        return handler

    return register
