"""Workspace paths and cache templates (spec §27.1, §27.3): the pure rules."""

from __future__ import annotations

import pytest

from openbrowse.domain.cache_templates import caching_wanted, parse_template
from openbrowse.domain.workspaces import is_relative_path, is_workspace_id, require_prefix
from openbrowse.errors import MalformedRequest


@pytest.mark.parametrize("path", ["uploads/people.csv", "a", "out/deep/x.txt", "名前/ファイル.txt"])
def test_plain_relative_paths_are_accepted(path: str) -> None:
    assert is_relative_path(path)


@pytest.mark.parametrize(
    "path", ["", "/etc/passwd", "../x", "a/../b", "a//b", "a/", ".env", "a/.hidden", "a\\b", "a/\x00", "x/" * 20]
)
def test_paths_that_could_leave_the_workspace_or_hide_are_refused(path: str) -> None:
    assert not is_relative_path(path)


def test_a_prefix_drops_its_trailing_slash_and_refuses_parents() -> None:
    assert require_prefix("uploads/") == "uploads"
    assert require_prefix(None) == ""
    with pytest.raises(MalformedRequest):
        require_prefix("../uploads")


def test_workspace_ids_are_canonical_uuids() -> None:
    assert is_workspace_id("00000000-0000-4000-8000-000000000000")
    assert not is_workspace_id("../../etc")
    assert not is_workspace_id("{00000000-0000-4000-8000-000000000000}")


def test_a_template_numbers_its_values_and_the_agent_sees_them_in_place() -> None:
    parsed = parse_template("Find @{{Blue Widget}} in @{{EUR}} today")
    assert parsed.template == "Find {{0}} in {{1}} today"
    assert parsed.values == ("Blue Widget", "EUR")
    assert parsed.agent_task == "Find Blue Widget in EUR today"
    other = parse_template("Find @{{Red Gadget}} in @{{USD}} today")
    assert other.key(None) == parsed.key(None)
    assert other.key({"type": "object"}) != parsed.key(None)


def test_cache_script_null_caches_only_templated_tasks_on_a_workspace() -> None:
    templated, plain = parse_template("Find @{{x}}"), parse_template("Find x")
    assert caching_wanted(None, templated, True)
    assert not caching_wanted(None, plain, True)
    assert caching_wanted(True, plain, True)
    assert not caching_wanted(False, templated, True)
    assert not caching_wanted(True, templated, False)
