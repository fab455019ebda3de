"""The errors our own HTTP provider client raises (the Anthropic one speaks the Messages API without the SDK).

They stand where the SDK's exception classes stood: the model raises browser-use's ``ModelProviderError`` /
``ModelRateLimitError`` *from* one of these, and ``failures.classify`` reads that cause. A timeout is a kind of
connection error (as in the SDKs and httpx), so classification tests it first.
"""

from __future__ import annotations

from collections.abc import Mapping

CONNECTION_ERROR_MESSAGE = "Connection error."
TIMEOUT_MESSAGE = "Request timed out."


class ProviderAPIError(Exception):
    """A request to a provider failed; ``message`` is what browser-use's wrapper carries on."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class ProviderConnectionError(ProviderAPIError):
    """No HTTP answer: the connection was refused, dropped, or cut while the reply was being read."""

    def __init__(self, message: str = CONNECTION_ERROR_MESSAGE) -> None:
        super().__init__(message)


class ProviderTimeoutError(ProviderConnectionError):
    """The request (connect, write, read or pool wait) timed out."""

    def __init__(self, message: str = TIMEOUT_MESSAGE) -> None:
        super().__init__(message)


class ProviderStatusError(ProviderAPIError):
    """The provider answered with an error status (or reported an error event inside a stream)."""

    def __init__(
        self, message: str, *, status_code: int, body: object = None, headers: Mapping[str, str] | None = None
    ) -> None:
        super().__init__(message)
        self.status_code = status_code
        self.body = body
        self.headers = dict(headers or {})


class ProviderRateLimitError(ProviderStatusError):
    """HTTP 429 (or a ``rate_limit_error`` event)."""
