"""One TLS context for every provider client of this process.

The SDKs build a fresh ``ssl.SSLContext`` (and load the CA bundle) for every client, and our clients are made
per call so their pools always close. Loading the CA bundle costs tens of milliseconds of CPU on the server's
event loop, once per model call; a context is safe to share between clients, so it is built once. (The same
for the httpx clients browser-use creates: ``openbrowse.upstream.httpx_tls``.)
"""

from __future__ import annotations

import functools
import ssl


@functools.cache
def shared_ssl_context() -> ssl.SSLContext:
    """The SDKs' own default context (system trust store, ``SSL_CERT_FILE``/``SSL_CERT_DIR`` honoured)."""
    import httpx2  # the SDKs' HTTP library; imported here so the server starts without it

    context: ssl.SSLContext = httpx2.create_ssl_context()
    return context
