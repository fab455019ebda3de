"""What find_links and read_pages share within a session: the last link set, the resume queue, pages read."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class ReadingState:
    found: list[dict[str, Any]] = field(default_factory=list)
    found_frame: str | None = None
    queue: list[str] | None = None
    """URLs still to read from the last bare read_pages call; None when no queue exists, [] when drained."""
    pages: dict[str, dict[str, Any]] = field(default_factory=dict)
    statuses: dict[str, dict[str, Any]] = field(default_factory=dict)

    def reset_queue(self) -> None:
        self.queue = None

    def default_urls(self) -> list[str]:
        return [link["href"] for link in self.found if not link.get("offhost")]
