"""Plain file names and cursor paging of file listings (spec §22.2, §22.3)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from openbrowse.domain.file_listing import (
    FileEntry,
    decode_cursor,
    encode_cursor,
    is_plain_name,
    page_of,
    require_plain_name,
)
from openbrowse.errors import MalformedRequest

WHEN = datetime(2026, 8, 18, 9, 14, 2, tzinfo=UTC)


def entries(*names: str) -> list[FileEntry]:
    return [FileEntry(name, len(name), WHEN) for name in names]


@pytest.mark.parametrize("name", ["report.txt", "a b (1).pdf", "résumé.docx", "x" * 255, "1"])
def test_plain_names_pass(name: str) -> None:
    assert is_plain_name(name)
    assert require_plain_name(name) == name


@pytest.mark.parametrize(
    "name", ["", ".", "..", ".env", "a/b", "../etc/passwd", "a\\b", "a\x00b", "line\nbreak", "del\x7f", "é" * 128]
)
def test_everything_else_is_refused_with_one_sentence(name: str) -> None:
    assert not is_plain_name(name)
    with pytest.raises(MalformedRequest) as refused:
        require_plain_name(name)
    assert refused.value.message.endswith(".")


def test_pages_walk_every_file_once_in_name_order() -> None:
    files = entries("c.txt", "a.txt", "e.txt", "b.txt", "d.txt")
    seen: list[str] = []
    cursor: str | None = None
    pages = 0
    while True:
        page = page_of(files, 2, cursor)
        pages += 1
        seen += [entry.name for entry in page.files]
        if not page.has_more:
            assert page.next_cursor is None
            break
        cursor = page.next_cursor
    assert seen == ["a.txt", "b.txt", "c.txt", "d.txt", "e.txt"]
    assert pages == 3


def test_a_file_added_before_the_cursor_never_shifts_the_next_page() -> None:
    first = page_of(entries("b", "d", "f"), 2, None)
    assert [entry.name for entry in first.files] == ["b", "d"]
    later = page_of(entries("a", "b", "c", "d", "f"), 2, first.next_cursor)
    assert [entry.name for entry in later.files] == ["f"]
    assert not later.has_more


def test_an_exact_page_has_no_more() -> None:
    page = page_of(entries("a", "b"), 2, None)
    assert not page.has_more and page.next_cursor is None
    assert page_of([], 5, None).files == []


def test_cursors_round_trip_and_foreign_ones_are_refused() -> None:
    assert decode_cursor(encode_cursor("résumé (1).pdf")) == "résumé (1).pdf"
    for foreign in ("!!!", "Li4vZXRj", "%%%"):
        with pytest.raises(MalformedRequest):
            decode_cursor(foreign)
