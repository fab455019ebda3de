"""The HTTP side of the command line: one ``httpx.Client`` on ``<url>/v3`` and the errors a user sees."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, TypeVar

import click
import httpx

from openbrowse.cli.sanitize import terminal_safe

DEFAULT_URL = "http://127.0.0.1:8420"
TIMEOUT = httpx.Timeout(30.0)
STREAM_TIMEOUT = httpx.Timeout(30.0, read=90.0)
"""The server sends a heartbeat every 15 s by default: a stream silent for 90 s is dead and is resumed."""

F = TypeVar("F", bound=Callable[..., Any])


class CliError(click.ClickException):
    """Usage, connection and server-refusal errors: exit code 2 (a failed task is 1)."""

    exit_code = 2


def connection_options(command: F) -> F:
    """``--url`` and ``--api-key``, also read from ``OPENBROWSE_URL`` / ``OPENBROWSE_API_KEY``."""
    command = click.option(
        "--api-key",
        envvar="OPENBROWSE_API_KEY",
        default=None,
        help="The server's API_KEY [env: OPENBROWSE_API_KEY].",
    )(command)
    command = click.option(
        "--url",
        envvar="OPENBROWSE_URL",
        default=DEFAULT_URL,
        show_default=True,
        help="The OpenBrowse server [env: OPENBROWSE_URL].",
    )(command)
    return command


def _detail(response: httpx.Response) -> str:
    try:
        detail = response.json().get("detail")
    except (json.JSONDecodeError, AttributeError):
        detail = None
    if isinstance(detail, list):  # FastAPI validation errors
        detail = "; ".join(str(item.get("msg", item)) for item in detail if isinstance(item, dict)) or None
    return terminal_safe(str(detail)) if detail else response.reason_phrase or f"HTTP {response.status_code}"


class ApiClient:
    """Requests against ``<url>/v3``; every failure becomes a :class:`CliError` with one readable sentence."""

    def __init__(self, url: str, api_key: str | None) -> None:
        base = url.rstrip("/")
        base = base.removesuffix("/v3")
        self.base_url = base
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self.http = httpx.Client(base_url=f"{base}/v3", headers=headers, timeout=TIMEOUT, trust_env=False)

    def __enter__(self) -> ApiClient:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.http.close()

    def request(self, method: str, path: str, **kwargs: Any) -> Any:
        try:
            response = self.http.request(method, path, **kwargs)
        except httpx.TransportError as exc:
            raise self.unreachable(exc) from exc
        self.check(response)
        return response.json() if response.content else None

    def unreachable(self, exc: Exception) -> CliError:
        return CliError(f"cannot reach the OpenBrowse server at {self.base_url} ({exc.__class__.__name__}: {exc})")

    @staticmethod
    def check(response: httpx.Response) -> None:
        if response.is_success:
            return
        if response.is_stream_consumed is False:
            response.read()
        raise CliError(f"the server answered {response.status_code}: {_detail(response)}")

    # -- the resources the CLI uses ----------------------------------------------------------------------------
    def create_session(self, body: dict[str, Any]) -> dict[str, Any]:
        result: dict[str, Any] = self.request("POST", "/sessions", json=body)
        return result

    def session(self, session_id: str) -> dict[str, Any]:
        result: dict[str, Any] = self.request("GET", f"/sessions/{session_id}")
        return result

    def sessions(self, page: int, page_size: int) -> dict[str, Any]:
        result: dict[str, Any] = self.request("GET", "/sessions", params={"page": page, "page_size": page_size})
        return result

    def last_message_id(self, session_id: str) -> str | None:
        """The id of the session's newest message (the feed pages forwards only, so walk it)."""
        last: str | None = None
        while True:
            params: dict[str, Any] = {"limit": 1000, **({"after": last} if last else {})}
            page = self.request("GET", f"/sessions/{session_id}/messages", params=params)
            if page["messages"]:
                last = page["messages"][-1]["id"]
            if not page["hasMore"]:
                return last

    def stop(self, session_id: str, strategy: str) -> dict[str, Any]:
        result: dict[str, Any] = self.request("POST", f"/sessions/{session_id}/stop", json={"strategy": strategy})
        return result

    def delete(self, session_id: str) -> None:
        self.request("DELETE", f"/sessions/{session_id}")

    def browsers(self) -> dict[str, Any]:
        result: dict[str, Any] = self.request("GET", "/browsers")
        return result
