"""bubus's event buses kept per engine thread; the patch itself lives in ``openbrowse.upstream.bubus_threads``."""

from __future__ import annotations

from openbrowse.upstream.bubus_threads import keep_event_buses_per_thread

__all__ = ["keep_event_buses_per_thread"]
