"""The system prompt names the tools registered this session and how to use them (spec §10.3)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from browser_use import Tools

from openbrowse.agent.prompts import system_prompt
from openbrowse.agent.tools import ToolContext, register_tools
from openbrowse.agent.tools.clipboard import Clipboard, capture_start_url
from openbrowse.domain.feed import FeedEntry
from openbrowse.domain.ids import SessionId
from openbrowse.network.policy import NetworkRules


class NullSink:
    async def append(self, session_id: SessionId, entry: FeedEntry) -> None:
        return None


def test_registered_tools_are_named_and_wrapped(tmp_path: Path) -> None:
    tools: Tools[Any] = Tools()
    ctx = ToolContext(SessionId("s"), tmp_path, Clipboard(), NullSink(), NetworkRules())  # type: ignore[arg-type]
    register_tools(tools, ctx)
    actions = tools.registry.registry.actions
    assert {"find_links", "read_pages", "http_fetch", "remember", "recall"} <= set(actions)
    assert all(getattr(actions[name].function, "__wrapped__", None) for name in ("find_links", "read_pages"))
    prompt = system_prompt(extension=None, action_names=list(actions), solver=False, start_url=None)
    assert "find_links, " in prompt and "read_pages" in prompt and "http_fetch" in prompt
    assert "Extraction golden path: open the list page, call find_links" in prompt
    bare = system_prompt(extension=None, action_names=["click"], solver=False, start_url=None)
    assert "golden path" not in bare and "http_fetch" not in bare


def test_start_url_is_captured_once_from_a_real_page() -> None:
    clipboard = Clipboard()
    assert not capture_start_url(clipboard, "about:blank")
    assert capture_start_url(clipboard, "https://example.com/a")
    assert not capture_start_url(clipboard, "https://example.com/b")
    assert clipboard.get("startUrl") == "https://example.com/a"
