"""One Anthropic Messages request over ``httpx``, with the retry policy the SDK had (spec §10.7: 3 retries).

``POST {base_url}/v1/messages`` (``?beta=true`` with ``anthropic-beta`` when betas are on), headers ``x-api-key``
and ``anthropic-version: 2023-06-01``, a JSON body. The SDK's policy is kept as it was: a request that got no
answer (connection refused or dropped, a timeout) or an answer with 408, 409, 429 or 5xx (unless the reply says
``x-should-retry: false``; ``true`` forces a retry) is sent again up to ``max_retries`` times, after
``retry-after-ms`` / ``retry-after`` when the provider gives a positive one, else 0.5 s doubling up to 8 s, less up
to a quarter of jitter. What is left afterwards raises :mod:`~openbrowse.llm.provider_errors`: a status error
with the SDK's message (``Error code: 429 - {body}``), or a connection/timeout error.

A streamed request is retried the same way until the provider answers 2xx; the stream itself is not retried.
"""

from __future__ import annotations

import asyncio
import contextlib
import email.utils
import json
import logging
import random
import time
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from typing import Any

import httpx

from openbrowse import __version__
from openbrowse.llm.provider_errors import (
    ProviderConnectionError,
    ProviderRateLimitError,
    ProviderStatusError,
    ProviderTimeoutError,
)
from openbrowse.llm.replies.parsing import UnusableOutputError
from openbrowse.llm.tls import shared_ssl_context
from openbrowse.shielding import run_shielded

logger = logging.getLogger(__name__)

ANTHROPIC_VERSION = "2023-06-01"
USER_AGENT = f"openbrowse/{__version__}"
"""Sent on every Claude request, so a provider or a proxy can tell this service's calls apart."""
MESSAGES_PATH = "/v1/messages"
INITIAL_RETRY_DELAY_S = 0.5
MAX_RETRY_DELAY_S = 8.0
_LONGEST_WAIT_S = 4_294_967.0
_RETRY_STATUSES = frozenset({408, 409, 429})


@dataclass(frozen=True, slots=True)
class Endpoint:
    """Where and how one model's requests go."""

    base_url: str
    api_key: str | None
    max_retries: int
    betas: tuple[str, ...] = ()

    @property
    def url(self) -> str:
        suffix = "?beta=true" if self.betas else ""
        return f"{self.base_url.rstrip('/')}{MESSAGES_PATH}{suffix}"

    def headers(self) -> dict[str, str]:
        headers = {
            "accept": "application/json",
            "content-type": "application/json",
            "anthropic-version": ANTHROPIC_VERSION,
            "user-agent": USER_AGENT,
        }
        if self.api_key:
            headers["x-api-key"] = self.api_key
        if self.betas:
            headers["anthropic-beta"] = ",".join(self.betas)
        return headers


@contextlib.asynccontextmanager
async def http_client(timeout_s: float) -> AsyncIterator[httpx.AsyncClient]:
    """A client for one model call (its pool closes with the call, shielded from a cancellation)."""
    client = httpx.AsyncClient(verify=shared_ssl_context(), timeout=httpx.Timeout(timeout_s), follow_redirects=True)
    try:
        yield client
    finally:
        await run_shielded(client.aclose())


def _retry_after(headers: Mapping[str, str]) -> float | None:
    try:
        return float(headers.get("retry-after-ms", "")) / 1000
    except ValueError:
        pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return float(value)
    except ValueError:
        pass
    parsed = email.utils.parsedate_tz(value)
    return None if parsed is None else float(email.utils.mktime_tz(parsed) - time.time())


def retry_delay(retries_taken: int, headers: Mapping[str, str] | None = None) -> float:
    """Seconds to wait before the next attempt (the provider's ``retry-after`` wins when positive)."""
    asked = _retry_after(headers) if headers is not None else None
    if asked is not None and asked > 0:
        return min(asked, _LONGEST_WAIT_S)
    backoff = min(INITIAL_RETRY_DELAY_S * 2.0 ** min(retries_taken, 1000), MAX_RETRY_DELAY_S)
    return backoff * (1 - 0.25 * random.random())


def should_retry(response: httpx.Response) -> bool:
    verdict: str | None = response.headers.get("x-should-retry")
    if verdict in ("true", "false"):
        return verdict == "true"
    status: int = response.status_code
    return status in _RETRY_STATUSES or status >= 500


def status_error(status: int, text: str, headers: Mapping[str, str]) -> ProviderStatusError:
    """The error for a non-2xx answer, with the message the SDK gave it."""
    stripped = text.strip()
    body: object = stripped
    try:
        body = json.loads(stripped)
        message = f"Error code: {status} - {body}"
    except ValueError:
        message = stripped or f"Error code: {status}"
    cls = ProviderRateLimitError if status == 429 else ProviderStatusError
    return cls(message, status_code=status, body=body, headers=headers)


def transport_error(exc: BaseException) -> ProviderConnectionError:
    """An httpx failure with no answer, as the SDK reported it (a timeout is a connection error too)."""
    if isinstance(exc, httpx.TimeoutException):
        return ProviderTimeoutError()
    return ProviderConnectionError()


async def _attempt(
    client: httpx.AsyncClient, endpoint: Endpoint, body: dict[str, Any], timeout_s: float | None, stream: bool
) -> httpx.Response:
    request = client.build_request(
        "POST",
        endpoint.url,
        headers=endpoint.headers(),
        json=body,
        timeout=httpx.Timeout(timeout_s) if timeout_s is not None else httpx.USE_CLIENT_DEFAULT,
    )
    try:
        return await client.send(request, stream=stream)
    except httpx.HTTPError as exc:  # transport failures and timeouts: no answer to read
        raise transport_error(exc) from exc


async def send(
    client: httpx.AsyncClient,
    endpoint: Endpoint,
    body: dict[str, Any],
    *,
    stream: bool = False,
    timeout_s: float | None = None,
) -> httpx.Response:
    """POST ``body`` with retries; the 2xx response (unread when ``stream``, the caller closes it)."""
    for retries_taken in range(endpoint.max_retries + 1):
        remaining = endpoint.max_retries - retries_taken
        try:
            response = await _attempt(client, endpoint, body, timeout_s, stream)
        except ProviderConnectionError as exc:
            if remaining <= 0:
                raise
            wait = retry_delay(retries_taken)
            logger.info("Retrying %s in %.2f s after %s", MESSAGES_PATH, wait, type(exc.__cause__).__name__)
            await asyncio.sleep(wait)
            continue
        if response.is_success:
            return response
        try:
            text = (await response.aread()).decode("utf-8", errors="replace")
        except httpx.HTTPError as exc:
            raise transport_error(exc) from exc
        finally:
            await response.aclose()
        if remaining > 0 and should_retry(response):
            wait = retry_delay(retries_taken, response.headers)
            logger.info("Retrying %s in %.2f s after HTTP %s", MESSAGES_PATH, wait, response.status_code)
            await asyncio.sleep(wait)
            continue
        raise status_error(response.status_code, text, response.headers)
    raise RuntimeError("unreachable: the retry loop always returns or raises")


async def read_json(response: httpx.Response, model: str) -> Any:
    """The body of a non-streamed 2xx response (a cut body is a connection error, as with the SDK)."""
    try:
        raw = await response.aread()
    except httpx.HTTPError as exc:
        raise transport_error(exc) from exc
    finally:
        await response.aclose()
    try:
        return json.loads(raw)
    except ValueError as exc:
        raise UnusableOutputError("The provider's response body is not valid JSON.", model) from exc
