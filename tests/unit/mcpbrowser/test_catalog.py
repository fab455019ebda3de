"""The browser tool catalog (spec §23.3) and the owner's file confinement: pure checks, no browser."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from openbrowse.mcpbrowser.pages import OwnerPages, ToolFailure
from openbrowse.mcpbrowser.tools import CATALOG
from tests.support.devtools_catalog import CHROME_DEVTOOLS_NAMES


class NoContext:
    """Just enough of a BrowserContext for OwnerPages to be built: no pages, no events."""

    def __init__(self) -> None:
        self.pages: list[Any] = []

    def on(self, *_: object) -> None:
        return None


def test_the_catalog_has_chrome_devtools_mcp_names_each_with_an_object_schema_and_browser_id() -> None:
    assert {tool.name for tool in CATALOG} == CHROME_DEVTOOLS_NAMES
    for tool in CATALOG:
        schema = tool.input_schema
        assert schema["type"] == "object", tool.name
        assert "browserId" in schema["properties"], tool.name
        assert tool.description
    by_name = {tool.name: tool.input_schema for tool in CATALOG}
    assert by_name["click"]["required"] == ["uid"]
    assert set(by_name["fill"]["required"]) == {"uid", "value"}
    assert by_name["navigate_page"]["properties"]["type"]["anyOf"][0]["enum"] == ["url", "back", "forward", "reload"]
    assert by_name["handle_dialog"]["properties"]["action"]["enum"] == ["accept", "dismiss"]


@pytest.mark.parametrize("requested", ["../x.png", "/etc/x.png", "sub/x.png", ".hidden", "", "..", "/"])
def test_a_file_path_outside_the_owner_area_is_refused(tmp_path: Path, requested: str) -> None:
    pages = OwnerPages(NoContext(), files_dir=tmp_path / "owner", rules=None)  # type: ignore[arg-type]
    with pytest.raises(ToolFailure, match="plain file name"):
        pages.file_path(requested)


def test_a_plain_name_or_a_path_inside_the_area_is_accepted(tmp_path: Path) -> None:
    area = tmp_path / "owner"
    pages = OwnerPages(NoContext(), files_dir=area, rules=None)  # type: ignore[arg-type]
    assert pages.file_path("shot.png") == area.resolve() / "shot.png"
    assert pages.file_path(str(area / "shot.png")) == area.resolve() / "shot.png"


def test_a_uid_that_is_not_a_snapshot_uid_fails_at_once(tmp_path: Path) -> None:
    pages = OwnerPages(NoContext(), files_dir=tmp_path, rules=None)  # type: ignore[arg-type]
    with pytest.raises(ToolFailure, match="No page is open"):
        pages.locator("e1")
