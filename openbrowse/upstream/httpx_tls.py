"""One shared default TLS context for the httpx clients browser-use creates.

Upstream: httpx 0.28.x, ``httpx._transports.default.create_ssl_context`` (imported there from
``httpx._config``), which ``HTTPTransport`` and ``AsyncHTTPTransport`` call with ``verify``, ``cert`` and
``trust_env`` for every new client; replacing the module attribute changes what new transports get.
"""

from __future__ import annotations

import functools
import ssl
from collections.abc import Callable


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


def build_shared_context() -> None:
    """Build the shared context now (blocking: loads the CA bundle), so no client pays for it on the loop."""
    from httpx._transports import default as transport

    getattr(transport, "create_ssl_context")()  # noqa: B009
