"""TLS contexts are built once per process: provider clients share one; httpx clients with default settings too."""

from __future__ import annotations

import ssl

import httpx

from openbrowse.llm.tls import share_httpx_default_context, shared_ssl_context


def _context(client: httpx.AsyncClient) -> ssl.SSLContext:
    context: ssl.SSLContext = client._transport._pool._ssl_context  # type: ignore[attr-defined]
    return context


def test_provider_context_is_built_once_and_verifies() -> None:
    assert shared_ssl_context() is shared_ssl_context()
    assert shared_ssl_context().verify_mode is ssl.CERT_REQUIRED


async def test_default_httpx_clients_share_a_context_custom_ones_keep_theirs() -> None:
    share_httpx_default_context()
    share_httpx_default_context()  # idempotent
    async with httpx.AsyncClient() as first, httpx.AsyncClient(timeout=3) as second:
        assert _context(first) is _context(second)
        assert _context(first).verify_mode is ssl.CERT_REQUIRED
    async with httpx.AsyncClient(verify=False) as insecure:
        assert _context(insecure).verify_mode is ssl.CERT_NONE
