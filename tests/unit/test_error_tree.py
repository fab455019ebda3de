"""The exception tree drawn in ``openbrowse/errors.py`` is the whole tree: every subclass of ``OpenBrowseError``
anywhere in the package is in the drawing, under the parent it really has."""

from __future__ import annotations

import importlib
import pkgutil
import re

import openbrowse
import openbrowse.errors
from openbrowse.errors import BrowserUnavailable, OpenBrowseError

SKIPPED_MODULES = ("openbrowse.__main__",)


def every_subclass(cls: type[OpenBrowseError]) -> set[type[OpenBrowseError]]:
    found: set[type[OpenBrowseError]] = set()
    for sub in cls.__subclasses__():
        found |= {sub} | every_subclass(sub)
    return found


def drawn_parents() -> dict[str, str]:
    """``name -> parent name`` as drawn in the docstring, from each line's indentation."""
    doc = openbrowse.errors.__doc__ or ""
    parents: dict[str, str] = {}
    stack: list[tuple[int, str]] = []
    for line in doc.splitlines():
        match = re.match(r"^([│ ]*)(?:├── |└── )?([A-Z]\w+)(?:\s|$)", line)
        if match is None or not ("── " in line or match.group(2) == "OpenBrowseError"):
            continue
        depth = len(match.group(1)) // 4 + (1 if "── " in line else 0)
        name = match.group(2)
        while stack and stack[-1][0] >= depth:
            stack.pop()
        if stack:
            parents[name] = stack[-1][1]
        stack.append((depth, name))
    return parents


def import_everything() -> None:
    for module in pkgutil.walk_packages(openbrowse.__path__, "openbrowse."):
        if module.name not in SKIPPED_MODULES:
            importlib.import_module(module.name)


def test_every_subclass_is_drawn_under_its_real_parent() -> None:
    import_everything()
    parents = drawn_parents()
    missing = sorted(cls.__name__ for cls in every_subclass(OpenBrowseError) if cls.__name__ not in parents)
    assert missing == [], f"add these to the tree in openbrowse/errors.py: {missing}"
    for cls in every_subclass(OpenBrowseError):
        assert parents[cls.__name__] == cls.__bases__[0].__name__, cls


def test_the_drawing_is_read_as_a_tree() -> None:
    parents = drawn_parents()
    assert parents["InvalidTransition"] == "InvalidRequest"
    assert parents["ResourceLimitExceeded"] == "ProcessDied"
    assert parents["OverLimit"] == "OpenBrowseError"


def test_a_host_without_a_sandbox_is_a_browser_that_cannot_start() -> None:
    from openbrowse.api.errors import status_for
    from openbrowse.slots.sandbox import SandboxUnavailable

    refusal = SandboxUnavailable("bubblewrap is missing; install it or set ALLOW_UNSANDBOXED=1.")
    assert isinstance(refusal, BrowserUnavailable)
    assert status_for(refusal) == 503
