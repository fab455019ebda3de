"""Titles made from a session's first task (spec §21.3)."""

from __future__ import annotations

import pytest

from openbrowse.domain.sessions import TITLE_LIMIT, title_from_task


@pytest.mark.parametrize(
    ("task", "title"),
    [
        ("Book a table", "Book a table"),
        ("\n\n   Find   the price\nthen report it", "Find the price"),
        ("", None),
        (None, None),
        (" \n\t\n", None),
    ],
)
def test_the_title_is_the_first_non_blank_line_with_spaces_collapsed(task: str | None, title: str | None) -> None:
    assert title_from_task(task) == title


def test_a_long_first_line_is_cut_to_the_limit_with_an_ellipsis() -> None:
    title = title_from_task("word " * 40)
    assert title is not None and len(title) == TITLE_LIMIT and title.endswith("…")
