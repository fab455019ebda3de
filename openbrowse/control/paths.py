"""The control API's routes as (method, path) pairs under a browser's base (spec §20.2), known without loading
the modules that serve them.

Those modules need Playwright, which the server loads only when the control API is first used (about 10 MiB and
a share of boot); the HTTP routes are installed at start-up from this table, and each call finds its handler in
:func:`openbrowse.control.catalog.route_for`. A unit test keeps this table equal to what the serving modules
register.
"""

from __future__ import annotations

from typing import Final

from openbrowse.control.call import Method

__all__ = ["ROUTE_PATHS"]

ROUTE_PATHS: Final[tuple[tuple[Method, str], ...]] = (
    ("GET", ""),
    ("GET", "/doctor"),
    ("GET", "/tabs"),
    ("POST", "/tabs/open"),
    ("POST", "/tabs/focus"),
    ("DELETE", "/tabs/{target_id}"),
    ("POST", "/tabs/action"),
    ("POST", "/navigate"),
    ("GET", "/snapshot"),
    ("POST", "/act"),
    ("GET", "/console"),
    ("GET", "/errors"),
    ("GET", "/requests"),
    ("POST", "/response/body"),
    ("GET", "/dialogs"),
    ("POST", "/hooks/dialog"),
    ("POST", "/set/offline"),
    ("POST", "/set/headers"),
    ("POST", "/set/credentials"),
    ("POST", "/set/geolocation"),
    ("POST", "/set/media"),
    ("POST", "/set/timezone"),
    ("POST", "/set/locale"),
    ("POST", "/set/device"),
    ("GET", "/cookies"),
    ("POST", "/cookies/set"),
    ("POST", "/cookies/set-many"),
    ("POST", "/cookies/clear"),
    ("GET", "/storage/{kind}"),
    ("POST", "/storage/{kind}/set"),
    ("POST", "/storage/{kind}/clear"),
    ("POST", "/permissions/grant"),
    ("POST", "/screenshot"),
    ("POST", "/pdf"),
    ("POST", "/highlight"),
    ("POST", "/trace/start"),
    ("POST", "/trace/stop"),
    ("POST", "/hooks/file-chooser"),
    ("POST", "/download"),
    ("POST", "/wait/download"),
    ("POST", "/extract"),
)
