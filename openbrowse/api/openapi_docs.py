"""What the published OpenAPI says about errors, so ``/docs`` and generated clients match the wire (spec §2.3).

Every error body is ``{"detail": "<one sentence>"}`` except a body/query validation failure, which keeps
FastAPI's list; a 422 can be either (a semantic refusal is one sentence), so it is declared as ``anyOf``.
Routers declare the statuses they can answer with :func:`error_responses`; the app adds 400 and 403 to every
route, since the Host and Origin checks (``origin_guard.py``) run in front of all of them.
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI
from pydantic import BaseModel, RootModel

__all__ = ["ErrorDetail", "Unprocessable", "error_responses", "finish_openapi", "request_body"]


class ErrorDetail(BaseModel):
    """One sentence saying what is wrong."""

    detail: str


class ValidationIssue(BaseModel):
    loc: list[str | int]
    msg: str
    type: str
    input: Any = None
    ctx: dict[str, Any] | None = None


class ValidationErrors(BaseModel):
    """FastAPI's shape: one entry per invalid body or query field."""

    detail: list[ValidationIssue]


class Unprocessable(RootModel[ValidationErrors | ErrorDetail]):
    """A validation failure (FastAPI's list) or a semantic refusal (one sentence)."""


_DESCRIPTIONS = {
    400: "Malformed request: the body is not JSON, or the Host header names no allowed host",
    401: "Invalid API key",
    403: "Origin not allowed (a browser page of another origin)",
    404: "Not found",
    422: "Invalid input: FastAPI's validation list, or one sentence for a semantic refusal",
    413: "The request body is larger than 1 MiB",
    429: "Too many failed authentication attempts from this client, or a bound of the server is reached",
    502: "The browser or live view behind this route did not answer",
    503: "No browser could be started",
}

_RETRY_AFTER = {"Retry-After": {"description": "Seconds to wait before trying again", "schema": {"type": "integer"}}}


def error_responses(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """``responses=`` entries for these statuses, each with its documented body."""
    responses: dict[int | str, dict[str, Any]] = {}
    for status in statuses:
        entry: dict[str, Any] = {
            "description": _DESCRIPTIONS[status],
            "model": Unprocessable if status == 422 else ErrorDetail,
        }
        if status == 429:
            entry["headers"] = _RETRY_AFTER
        responses[status] = entry
    return responses


GUARDED = error_responses(400, 403, 413)
"""Every route: the Host allow-list (400), the Origin check (403) and the body limit (413, ``body_limit.py``)."""
AUTHENTICATED = error_responses(401, 429)


def request_body(model: type[BaseModel], *, required: bool = True) -> dict[str, Any]:
    """``openapi_extra`` for a route that reads its JSON body by hand (``body.parse_body``)."""
    schema = model.model_json_schema(by_alias=True)
    return {"requestBody": {"required": required, "content": {"application/json": {"schema": schema}}}}


_SECURITY_SCHEMES = {
    "apiKeyBearer": {"type": "http", "scheme": "bearer", "description": "API_KEY as `Authorization: Bearer`"},
    "apiKeyHeader": {"type": "apiKey", "in": "header", "name": "X-Browser-Use-API-Key", "description": "API_KEY"},
    "dashboardBasic": {"type": "http", "scheme": "basic", "description": "DASHBOARD_USER / DASHBOARD_PASSWORD"},
    "resourceToken": {
        "type": "apiKey",
        "in": "query",
        "name": "token",
        "description": "The token carried in a session's liveUrl (live view) or a browser's cdpUrl (CDP)",
    },
}


def _security_for(path: str) -> list[dict[str, list[str]]]:
    """Who may call an operation (spec §2.1, §4.10); any one entry suffices."""
    schemes = ["apiKeyBearer", "apiKeyHeader"]
    if path.startswith("/vnc/"):
        schemes.append("dashboardBasic")
    if "/cdp" in path or (path.startswith("/vnc/") and not path.endswith("/control")):
        schemes.append("resourceToken")
    return [{scheme: []} for scheme in schemes]


def finish_openapi(app: FastAPI) -> None:
    """Complete the generated document: who may call what (security schemes; not enforced while API_KEY is
    unset on a loopback bind), and every 4xx/5xx body as ``application/json``, as sent (FastAPI files a declared
    error model under the route's own media type, which would make an HTML route claim HTML errors)."""
    build = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            document = build()
            document.setdefault("components", {})["securitySchemes"] = _SECURITY_SCHEMES
            for path, operations in document.get("paths", {}).items():
                for operation in operations.values():
                    responses = operation.get("responses", {})
                    _json_error_bodies(responses)
                    if "401" in responses:
                        operation["security"] = _security_for(path)
            app.openapi_schema = document
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]


def _json_error_bodies(responses: dict[str, Any]) -> None:
    for status, response in responses.items():
        content = response.get("content")
        if not status.startswith(("4", "5")) or not content or "application/json" in content:
            continue
        media_type, body = next(iter(content.items()))
        response["content"] = {"application/json": body} | {k: v for k, v in content.items() if k != media_type}
