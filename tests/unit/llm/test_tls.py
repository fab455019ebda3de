"""Provider clients share one TLS context (httpx clients browser-use creates: tests/contract)."""

from __future__ import annotations

import ssl

from openbrowse.llm.tls import shared_ssl_context


def test_provider_context_is_built_once_and_verifies() -> None:
    assert shared_ssl_context() is shared_ssl_context()
    assert shared_ssl_context().verify_mode is ssl.CERT_REQUIRED
