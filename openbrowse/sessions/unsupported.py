"""BU-only request fields we accept but cannot honour (spec §2.2, §28.1): a request that sets one to a value we
cannot honour gets one ``system`` feed event naming it, so nothing is silently ignored.

``useOwnKey`` is not among them: a self-hosted server always runs on its operator's own provider keys.
"""

from __future__ import annotations

from collections.abc import Mapping

from openbrowse.domain.feed import FeedEntry

__all__ = ["UNHONOURED_FIELDS", "unhonoured_entry", "unhonoured_fields"]

UNHONOURED_FIELDS: Mapping[str, str] = {
    "agentmail": "an AgentMail inbox for the agent",
    "codeMode": "BU's code mode",
    "enableScheduledTasks": "scheduled tasks",
}
"""Wire name → what it asks for. Each is unhonoured when set to anything but ``false``/``null``."""


def unhonoured_fields(values: Mapping[str, object]) -> list[str]:
    """The wire names in ``values`` set to a value we cannot honour, in :data:`UNHONOURED_FIELDS` order."""
    return [name for name in UNHONOURED_FIELDS if values.get(name) not in (None, False)]


def unhonoured_entry(names: list[str]) -> FeedEntry | None:
    """One ``system`` event naming every such field of one request, or None when there is none."""
    if not names:
        return None
    what = "; ".join(f"{name} ({UNHONOURED_FIELDS[name]})" for name in names)
    summary = f"Not available on this self-hosted server, so ignored: {what}."
    return FeedEntry.system("unsupported_option", summary, fields=names)
