"""The HTTP side of ``openbrowse browser``: which browser an id names, and calls on its control API (spec §20).

The control API hangs under ``/v3/browsers/{id}/browser`` for raw browsers and ``/v3/sessions/{id}/browser`` for
agent sessions. Its refusals carry ``{error, code?, detail}`` (§20.4), the rest of the API ``{detail}`` (§2.3):
:class:`ControlRefused` shows whichever is there, with the code, so a user sees ``session_busy`` or ``REF_STALE``
rather than a bare status.
"""

from __future__ import annotations

import json
from typing import Any, Literal

import httpx

from openbrowse.cli.client import ApiClient, CliError
from openbrowse.cli.sanitize import terminal_safe

__all__ = ["ControlClient", "ControlRefused", "TargetKind", "refusal_message"]

TargetKind = Literal["browsers", "sessions"]

ACT_TIMEOUT = httpx.Timeout(30.0, read=150.0)
"""Waits, downloads and extraction may take up to the server's own limits (2 minutes), so reads wait longer."""


def _body(response: httpx.Response) -> Any:
    try:
        return response.json()
    except (json.JSONDecodeError, UnicodeDecodeError):
        return None


def refusal_message(status: int, body: Any, reason: str) -> str:
    """One readable sentence for a refusal: the body's ``error`` (or ``detail``), its ``code``, the status."""
    message: Any = None
    code: Any = None
    if isinstance(body, dict):
        message = body.get("error") or body.get("detail")
        code = body.get("code")
    if isinstance(message, list):  # FastAPI validation errors from routes outside the control API
        message = "; ".join(str(item.get("msg", item)) for item in message if isinstance(item, dict))
    text = terminal_safe(str(message)) if message else reason or f"HTTP {status}"
    label = f"{status} {terminal_safe(str(code))}" if code else str(status)
    return f"the server answered {label}: {text}"


class ControlRefused(CliError):
    """A call the server refused (4xx/5xx): exit code 2, with the response body kept for ``--json``."""

    def __init__(self, status: int, body: Any, reason: str) -> None:
        super().__init__(refusal_message(status, body, reason))
        self.status = status
        self.body = body


class ControlClient:
    """Calls on one browser's control API; the id is resolved (raw browser first, then session) on first use."""

    def __init__(self, api: ApiClient, target_id: str, kind: TargetKind | None = None) -> None:
        self.api = api
        self.target_id = target_id
        self.kind = kind

    def __enter__(self) -> ControlClient:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.api.__exit__(*exc_info)

    @property
    def base_path(self) -> str:
        """``/browsers/{id}/browser`` or ``/sessions/{id}/browser`` (relative to ``<url>/v3``)."""
        if self.kind is None:
            self.kind = self._resolve_kind()
        return f"/{self.kind}/{self.target_id}/browser"

    def _resolve_kind(self) -> TargetKind:
        for kind in ("browsers", "sessions"):
            response = self._send("GET", f"/{kind}/{self.target_id}")
            if response.status_code == 404:
                continue
            self._check(response)
            return kind
        raise CliError(f"no raw browser or session has the id {terminal_safe(self.target_id)}")

    def _send(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        try:
            return self.api.http.request(method, path, timeout=ACT_TIMEOUT, **kwargs)
        except httpx.TransportError as exc:
            raise self.api.unreachable(exc) from exc

    @staticmethod
    def _check(response: httpx.Response) -> None:
        if not response.is_success:
            raise ControlRefused(response.status_code, _body(response), response.reason_phrase)

    def call(self, method: str, route: str, *, params: dict[str, Any] | None = None, body: Any = None) -> Any:
        """``method {B}{route}``; the parsed JSON body, or :class:`ControlRefused` for a refusal."""
        query = {key: value for key, value in (params or {}).items() if value is not None}
        kwargs: dict[str, Any] = {"params": query} if query else {}
        if body is not None:
            kwargs["json"] = body
        response = self._send(method, f"{self.base_path}{route}", **kwargs)
        self._check(response)
        return _body(response) if response.content else {}

    def get(self, route: str, **params: Any) -> Any:
        return self.call("GET", route, params=params)

    def post(self, route: str, body: dict[str, Any]) -> Any:
        return self.call("POST", route, body={key: value for key, value in body.items() if value is not None})

    def delete(self, route: str) -> Any:
        return self.call("DELETE", route)

    def act(self, kind: str, **fields: Any) -> Any:
        """``POST {B}/act`` with ``{kind, …}``; fields that are None are left out."""
        return self.post("/act", {"kind": kind, **fields})

    def absolute_url(self, url: str) -> str:
        """A files route from the server (``/v3/…``) as a URL the user can open."""
        return url if "://" in url else f"{self.api.base_url}{url}"
