"""The dashboard (spec §19.4): server-rendered pages at ``/`` with small vanilla scripts, no build step.

Everything the pages load is served from ``static/`` by this app; nothing comes from the internet.
"""

from __future__ import annotations

from openbrowse.api.dashboard.routes import install_dashboard

__all__ = ["install_dashboard"]
