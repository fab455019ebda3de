"""Error responses: the one place that maps exceptions to HTTP statuses and JSON bodies."""

from __future__ import annotations

import logging
import math
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from openbrowse.api.auth import AuthFailed, AuthThrottled
from openbrowse.errors import (
    BrowserUnavailable,
    InvalidRequest,
    MalformedRequest,
    NotFound,
    OpenBrowseError,
    OverLimit,
    ProcessError,
    StoreUnavailable,
    TooLarge,
)

logger = logging.getLogger(__name__)

ERROR_STATUS: dict[type[OpenBrowseError], int] = {
    MalformedRequest: 400,
    NotFound: 404,
    TooLarge: 413,
    InvalidRequest: 422,
    OverLimit: 429,
    BrowserUnavailable: 503,
    ProcessError: 503,
    StoreUnavailable: 503,
}


def status_for(exc: OpenBrowseError) -> int:
    for cls in type(exc).__mro__:
        if cls in ERROR_STATUS:
            return ERROR_STATUS[cls]
    return 500


def _json_safe(value: Any) -> Any:
    """Render non-finite floats as strings so echoing bad input never breaks the error response."""
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, dict):
        return {str(k): _json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_json_safe(v) for v in value]
    if isinstance(value, str | int | float | bool) or value is None:
        return value
    return str(value)


def _validation_error_body(errors: Any) -> list[dict[str, Any]]:
    cleaned = []
    for error in errors:
        item = {"loc": list(error.get("loc", ())), "msg": str(error.get("msg", "")), "type": error.get("type", "")}
        if "input" in error:
            item["input"] = _json_safe(error["input"])
        if error.get("ctx"):
            item["ctx"] = _json_safe(error["ctx"])
        cleaned.append(item)
    return cleaned


def auth_refusal(exc: AuthFailed | AuthThrottled, headers: dict[str, str] | None = None) -> JSONResponse:
    """401 for bad credentials, 429 with ``Retry-After`` while the client is locked out (spec §2.1)."""
    if isinstance(exc, AuthThrottled):
        return JSONResponse({"detail": str(exc)}, status_code=429, headers={"Retry-After": str(exc.retry_after)})
    return JSONResponse({"detail": str(exc)}, status_code=401, headers=headers)


def install_error_handlers(app: FastAPI) -> None:
    async def on_domain_error(_: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, OpenBrowseError)
        status = status_for(exc)
        if status == 500:
            logger.error("Unhandled domain error: %s", exc, exc_info=exc)
            return JSONResponse({"detail": "Internal Server Error"}, status_code=500)
        headers = {"Retry-After": str(exc.retry_after)} if isinstance(exc, OverLimit) else None
        body = {"detail": exc.message, "code": exc.code} if exc.code_on_wire else {"detail": exc.message}
        return JSONResponse(body, status_code=status, headers=headers)

    async def on_validation_error(_: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, RequestValidationError)
        return JSONResponse({"detail": _validation_error_body(exc.errors())}, status_code=422)

    async def on_auth_failed(_: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, AuthFailed)
        # One realm everywhere: a browser that signed in to the dashboard answers the challenges of the API
        # calls its pages make and of the live view with the same cached credentials, without asking again.
        # No challenge where Basic cannot help (no DASHBOARD_PASSWORD) or a login cookie was sent (it expired).
        return auth_refusal(exc, {"WWW-Authenticate": 'Basic realm="OpenBrowse"'} if exc.challenge else None)

    async def on_throttled(_: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, AuthThrottled)
        return auth_refusal(exc)

    async def on_http_error(_: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, StarletteHTTPException)
        detail = exc.detail if exc.status_code != 404 or exc.detail != "Not Found" else "Not found"
        return JSONResponse({"detail": detail}, status_code=exc.status_code, headers=exc.headers)

    async def on_unexpected(_: Request, exc: Exception) -> JSONResponse:
        logger.error("Unhandled error: %s", exc, exc_info=exc)
        return JSONResponse({"detail": "Internal Server Error"}, status_code=500)

    app.add_exception_handler(OpenBrowseError, on_domain_error)
    app.add_exception_handler(RequestValidationError, on_validation_error)
    app.add_exception_handler(AuthFailed, on_auth_failed)
    app.add_exception_handler(AuthThrottled, on_throttled)
    app.add_exception_handler(StarletteHTTPException, on_http_error)
    app.add_exception_handler(Exception, on_unexpected)
