"""Skips that would hide a feature on the CI machine fail there instead.

The CI machine (``CI`` set; ``make test`` sets it) installs every tool the suite uses: Xvfb, x11vnc, websockify,
Chromium, bubblewrap, npm and its registry. A test that skips there because one is missing would pass the suite
without testing what it is for, so :func:`required` turns the skip into a failure naming what is missing, and
:func:`skip_or_fail` does the same from inside a test. On a developer's machine both skip, with the reason.
"""

from __future__ import annotations

import os
from typing import NoReturn

import pytest

__all__ = ["CI_MARKER", "on_ci", "required", "skip_or_fail"]

CI_MARKER = "missing_on_ci"


def on_ci() -> bool:
    """Whether this run is the CI machine's (``CI`` set to anything but empty)."""
    return bool(os.environ.get("CI"))


def required(problem: str | None) -> pytest.MarkDecorator:
    """A ``pytestmark`` entry: nothing when ``problem`` is None; else a skip giving it, or on CI a failure."""
    if problem is None:
        return pytest.mark.skipif(False, reason="everything needed is here")
    if on_ci():
        mark: pytest.MarkDecorator = getattr(pytest.mark, CI_MARKER)(problem)
        return mark
    return pytest.mark.skip(reason=problem)


def skip_or_fail(reason: str) -> NoReturn:
    """Skip the running test with ``reason``, or on CI fail it."""
    if on_ci():
        pytest.fail(f"{reason} (CI is set: this machine must have it)", pytrace=False)
    pytest.skip(reason)


def fail_if_marked(item: pytest.Item) -> None:
    """``pytest_runtest_setup`` body: fail a test that :func:`required` marked as missing something on CI."""
    marker = item.get_closest_marker(CI_MARKER)
    if marker is not None:
        pytest.fail(f"{marker.args[0]} (CI is set: this machine must have it)", pytrace=False)
