"""No file-level import cycles in ``openbrowse`` (issue 24): modules that import each other, even only for typing,
are one module split in the wrong place. import-linter's layers contract sees packages, not files; this sees files."""

from __future__ import annotations

import grimp
import pytest

KNOWN_CYCLES: set[frozenset[str]] = set()
"""Cycles tolerated while a change that removes them lands; the test fails until this set matches the code."""


@pytest.fixture(scope="module")
def graph() -> grimp.ImportGraph:
    return grimp.build_graph("openbrowse")


def cycles(graph: grimp.ImportGraph) -> set[frozenset[str]]:
    """The strongly connected components of more than one module (``TYPE_CHECKING`` imports count too)."""
    seen: set[str] = set()
    found: set[frozenset[str]] = set()
    for module in sorted(graph.modules):
        if module in seen:
            continue
        component = graph.find_upstream_modules(module) & graph.find_downstream_modules(module) | {module}
        seen |= component
        if len(component) > 1:
            found.add(frozenset(component))
    return found


def describe(graph: grimp.ImportGraph, component: frozenset[str]) -> str:
    edges = sorted(
        f"    {importer} -> {imported}"
        for importer in component
        for imported in graph.find_modules_directly_imported_by(importer) & component
    )
    return "\n".join([f"  {', '.join(sorted(component))}:", *edges])


def test_no_module_imports_itself_through_others(graph: grimp.ImportGraph) -> None:
    unexpected = cycles(graph) - KNOWN_CYCLES
    assert not unexpected, "Import cycles between files:\n" + "\n".join(describe(graph, c) for c in unexpected)


def test_the_known_cycles_are_still_exactly_there(graph: grimp.ImportGraph) -> None:
    gone = KNOWN_CYCLES - cycles(graph)
    assert not gone, f"A known cycle changed or is gone: update KNOWN_CYCLES: {[sorted(c) for c in gone]}"


def test_a_cycle_is_found() -> None:
    graph = grimp.ImportGraph()
    for name in ("pkg", "pkg.a", "pkg.b", "pkg.c", "pkg.d"):
        graph.add_module(name)
    graph.add_import(importer="pkg.a", imported="pkg.b")
    graph.add_import(importer="pkg.b", imported="pkg.c")
    graph.add_import(importer="pkg.c", imported="pkg.a")
    graph.add_import(importer="pkg.d", imported="pkg.a")
    assert cycles(graph) == {frozenset({"pkg.a", "pkg.b", "pkg.c"})}
    assert "pkg.c -> pkg.a" in describe(graph, frozenset({"pkg.a", "pkg.b", "pkg.c"}))
