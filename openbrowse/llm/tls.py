"""One TLS context for every provider client of this process.

The SDKs build a fresh ``ssl.SSLContext`` (and load the CA bundle) for every client, and our clients are made
per call so their pools always close. Loading the CA bundle costs tens of milliseconds of CPU on the server's
event loop, once per model call; a context is safe to share between clients, so it is built once.
"""

from __future__ import annotations

import functools
import ssl
from collections.abc import Callable


@functools.cache
def shared_ssl_context() -> ssl.SSLContext:
    """The SDKs' own default context (system trust store, ``SSL_CERT_FILE``/``SSL_CERT_DIR`` honoured)."""
    import httpx2  # the SDKs' HTTP library; imported here so the server starts without it

    context: ssl.SSLContext = httpx2.create_ssl_context()
    return context


def share_httpx_default_context() -> None:
    """Make httpx clients created with default TLS settings share one context (idempotent).

    browser-use opens an ``httpx.AsyncClient`` per browser session on the event loop (CDP discovery, its cloud
    client), and httpx builds a new context from the CA bundle for each: about 0.1 s of CPU that stalled every
    request while a session started. Clients with their own ``verify``/``cert`` settings are left alone.
    """
    from httpx._transports import default as transport

    original: Callable[..., ssl.SSLContext] = getattr(transport, "create_ssl_context")  # noqa: B009
    if getattr(original, "_openbrowse_shared", False):
        return
    shared = functools.cache(original)

    def create_ssl_context(verify: object = True, cert: object = None, trust_env: bool = True) -> ssl.SSLContext:
        if verify is True and cert is None and trust_env:
            return shared()
        return original(verify=verify, cert=cert, trust_env=trust_env)

    create_ssl_context._openbrowse_shared = True  # type: ignore[attr-defined]
    setattr(transport, "create_ssl_context", create_ssl_context)  # noqa: B010 - a module attribute of httpx
