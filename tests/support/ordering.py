"""The order test files are handed to the parallel workers: the slow ones first, the many quick ones last.

``make test`` runs files on two workers (``--dist loadfile``), each taking the next file when it runs short. xdist's
default reorders the files by their number of tests, most first, so the end-to-end files (few tests, each a real
server and browser) came last and the run ended with one worker finishing a long file while the other idled. Here
end-to-end files go first (those with a longer ``timeout`` mark, the known slow ones, before the rest), then the
integration files, then the unit files, whose small steps fill the gaps at the end; the Makefile passes
``--no-loadscope-reorder`` so xdist keeps this order. The tests of one file keep their order.
"""

from __future__ import annotations

from pathlib import Path

import pytest

__all__ = ["slow_files_first"]

TIERS = ("e2e", "integration", "contract")  # then tests/*.py and tests/unit


def slow_files_first(root: Path, items: list[pytest.Item]) -> None:
    """Sort ``items`` in place: by tier, then by the file's longest timeout mark, then as collected."""
    first_seen: dict[Path, int] = {}
    weight: dict[Path, float] = {}
    for index, item in enumerate(items):
        first_seen.setdefault(item.path, index)
        marker = item.get_closest_marker("timeout")
        timeout = float(marker.args[0]) if marker is not None and marker.args else 0.0
        weight[item.path] = max(weight.get(item.path, 0.0), timeout)

    def tier(path: Path) -> int:
        try:
            parts = path.relative_to(root / "tests").parts
        except ValueError:
            return len(TIERS)
        return TIERS.index(parts[0]) if parts and parts[0] in TIERS else len(TIERS)

    position = {id(item): index for index, item in enumerate(items)}
    items.sort(key=lambda item: (tier(item.path), -weight[item.path], first_seen[item.path], position[id(item)]))
