"""What of the host's ``/etc`` a slot's sandbox sees (spec §24.2, §24.3): only what its programs read there.

The sandbox's ``/etc`` is a fresh directory; :data:`ETC_ENTRIES` that exist on the host are bound into it read-only
(links as links, so ``localtime`` and ``os-release`` still point into ``/usr``). Everything else a host keeps in
``/etc`` (``shadow``, ``ssh/``, ``ssl/private/``, ``hostname``, ``machine-id``, ``environment``, the package manager's
and the services' configuration, with whatever secrets they hold) is absent. ``passwd``, ``group`` and ``hosts`` are
written for the slot by the sandbox itself.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

__all__ = ["ETC_ENTRIES", "etc_binds"]

ETC_ENTRIES = (
    "ld.so.cache", "ld.so.conf", "ld.so.conf.d",  # the dynamic linker
    "alternatives",  # /usr/bin entries (x-www-browser, awk, which, ...) are links through it
    "fonts",  # fontconfig (Chromium, Xvfb's clients); the cache is bound from the server, see font_cache
    "ssl/certs", "ssl/openssl.cnf", "ca-certificates", "ca-certificates.conf", "pki/tls/certs",  # TLS roots
    "localtime", "timezone",  # the time zone pages and scripts see
    "nsswitch.conf", "host.conf", "gai.conf", "protocols", "services",  # name lookups (through the proxy)
    "locale.alias", "mime.types", "os-release",
    "chromium", "chromium.d",  # Chromium's policies and the Debian wrapper's defaults
    "X11", "gtk-3.0", "glvnd",  # Xvfb, x11vnc and the browser's toolkit
    f"python3.{sys.version_info.minor}", "python3",  # Debian's Python (websockify; a Debian-built script host)
)  # fmt: skip
"""What of the host's ``/etc`` a sandbox sees (read-only): what Chromium, Xvfb, x11vnc, websockify, fontconfig,
ffmpeg and the script host's Python read there, nothing else. ``passwd``, ``group`` and ``hosts`` are made for the
slot by the sandbox; ``shadow``, ``ssh/``, ``ssl/private/``, ``hostname``, ``environment``,
the package manager's and the services' configuration (with whatever secrets a host keeps there) are absent."""


def etc_binds(etc: Path = Path("/etc")) -> list[str]:
    """bubblewrap arguments for a fresh ``/etc`` (mode 0755) holding only :data:`ETC_ENTRIES` (blocking, tiny)."""
    args = ["--perms", "0755", "--dir", "/etc"]
    made = {Path("/etc")}
    for entry in ETC_ENTRIES:
        source = etc / entry
        if not source.is_symlink() and not source.exists():
            continue
        target = Path("/etc") / entry
        for parent in reversed(target.parents):
            if parent.is_relative_to("/etc") and parent not in made:  # bubblewrap would make it 0700
                made.add(parent)
                args += ["--perms", "0755", "--dir", str(parent)]
        if source.is_symlink():
            args += ["--symlink", os.readlink(source), str(target)]
        else:
            args += ["--ro-bind", str(source), str(target)]
    return args
