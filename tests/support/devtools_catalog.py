"""The browser tools chrome-devtools-mcp serves, by name: what `/v3/mcp` must offer beside the session tools
(spec §23.3). Written out by hand from chrome-devtools-mcp's catalog, so a tool dropped from ours fails the tests."""

from __future__ import annotations

CHROME_DEVTOOLS_NAMES = frozenset(
    {
        "list_pages",
        "new_page",
        "select_page",
        "close_page",
        "navigate_page",
        "wait_for",
        "take_snapshot",
        "take_screenshot",
        "click",
        "hover",
        "fill",
        "fill_form",
        "type_text",
        "press_key",
        "handle_dialog",
        "evaluate_script",
        "list_console_messages",
        "list_network_requests",
        "resize_page",
    }
)
