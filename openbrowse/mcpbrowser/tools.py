"""The browser tools (spec §23.3): chrome-devtools-mcp's names, arguments and text replies, over :class:`OwnerPages`.

:data:`CATALOG` is built once at import: one :class:`BrowserTool` per name with its description, argument model
and JSON Schema. A tool raises :class:`~openbrowse.mcpbrowser.pages.ToolFailure` (or lets Playwright fail) and the
MCP layer turns that into an ``isError`` result; replies are text blocks in the upstream's markdown-ish shape
(``# <tool> response``, then ``## Pages`` where the page set matters), screenshots an image block.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from openbrowse.control import page_log
from openbrowse.mcpbrowser import tool_args as args
from openbrowse.mcpbrowser.pages import OwnerPages, ToolFailure

if TYPE_CHECKING:
    # Only the replies are MCP types, and replies are only made once a /v3/mcp request has loaded the SDK (see
    # api/mcp_endpoint.py): the server starts without it.
    from mcp_types import ImageContent, TextContent

    Content = list[TextContent | ImageContent]

__all__ = ["CATALOG", "BrowserTool", "Content"]
DEFAULT_TIMEOUT_MS = 10_000
ACTION_TIMEOUT_MS = 5_000
MAX_RESULT_CHARS = 40_000


@dataclass(frozen=True, slots=True)
class BrowserTool:
    name: str
    description: str
    arguments: type[args.ToolArgs]
    run: Callable[[OwnerPages, Any], Awaitable[Content]]
    read_only: bool = False

    @property
    def input_schema(self) -> dict[str, Any]:
        return self.arguments.model_json_schema()


class _Reply:
    def __init__(self, tool: str) -> None:
        self.lines = [f"# {tool} response"]
        self.images: list[ImageContent] = []

    def say(self, text: str) -> _Reply:
        self.lines.append(text)
        return self

    def content(self) -> Content:
        text = "\n".join(self.lines)
        if len(text) > MAX_RESULT_CHARS:
            text = text[:MAX_RESULT_CHARS] + "\n… (truncated)"
        from mcp_types import TextContent  # loaded with the SDK (see the note at the imports)

        blocks: Content = [TextContent(type="text", text=text)]
        blocks.extend(self.images)
        return blocks


def _timeout(ms: int) -> int:
    return ms if ms > 0 else DEFAULT_TIMEOUT_MS


async def _with_pages(pages: OwnerPages, reply: _Reply) -> Content:
    reply.say(await pages.listing())
    return reply.content()


async def _after_action(pages: OwnerPages, reply: _Reply, include_snapshot: bool) -> Content:
    entry = pages.selected
    if (dialog := entry.dialog_notice()) is not None:
        reply.say(dialog)
    elif include_snapshot:
        reply.say(await entry.snapshot())
    return reply.content()


# -- navigation ------------------------------------------------------------------------------------------------
async def list_pages(pages: OwnerPages, _: args.ListPagesArgs) -> Content:
    return await _with_pages(pages, _Reply("list_pages"))


async def new_page(pages: OwnerPages, call: args.NewPageArgs) -> Content:
    await pages.check_url(call.url)
    previous = pages.selected if pages.entries else None
    entry = await pages.new_page()
    await entry.page.goto(call.url, timeout=_timeout(call.timeout))
    if call.background and previous is not None:
        pages.select(previous)
    return await _with_pages(pages, _Reply("new_page"))


async def select_page(pages: OwnerPages, call: args.SelectPageArgs) -> Content:
    entry = pages.entry(call.pageId)
    pages.select(entry)
    if call.bringToFront:
        await entry.page.bring_to_front()
    return await _with_pages(pages, _Reply("select_page"))


async def close_page(pages: OwnerPages, call: args.ClosePageArgs) -> Content:
    entry = pages.entry(call.pageId)
    if len(pages.entries) == 1:
        raise ToolFailure("The last open page cannot be closed.")
    await entry.page.close()
    return await _with_pages(pages, _Reply("close_page"))


async def navigate_page(pages: OwnerPages, call: args.NavigatePageArgs) -> Content:
    entry = pages.selected
    kind = call.type or ("url" if call.url else None)
    timeout = _timeout(call.timeout)
    reply = _Reply("navigate_page")
    if kind is None:
        raise ToolFailure("Either url or a type is required.")
    if kind == "url":
        if not call.url:
            raise ToolFailure("A url is required for type=url.")
        await pages.check_url(call.url)
        await entry.page.goto(call.url, timeout=timeout)
        reply.say(f"Successfully navigated to {entry.page.url}.")
    elif kind == "reload":
        await entry.page.reload(timeout=timeout)
        reply.say(f"Successfully reloaded the page ({entry.page.url}).")
    else:
        moved = await (entry.page.go_back if kind == "back" else entry.page.go_forward)(timeout=timeout)
        if moved is None and entry.page.url == "about:blank":
            reply.say(f"There is no page to go {kind} to.")
        else:
            reply.say(f"Successfully navigated {kind} to {entry.page.url}.")
    return await _with_pages(pages, reply)


async def wait_for(pages: OwnerPages, call: args.WaitForArgs) -> Content:
    entry = pages.selected
    try:
        await entry.page.get_by_text(call.text).first.wait_for(state="visible", timeout=_timeout(call.timeout))
    except Exception as exc:
        raise ToolFailure(f'Timed out waiting for "{call.text}" to appear.') from exc
    reply = _Reply("wait_for").say(f'Element with text "{call.text}" found.')
    reply.say(await entry.snapshot())
    return reply.content()


async def resize_page(pages: OwnerPages, call: args.ResizePageArgs) -> Content:
    await pages.selected.page.set_viewport_size({"width": call.width, "height": call.height})
    return await _with_pages(pages, _Reply("resize_page").say(f"The page is now {call.width}x{call.height}."))


# -- reading ---------------------------------------------------------------------------------------------------
async def take_snapshot(pages: OwnerPages, call: args.TakeSnapshotArgs) -> Content:
    text = await pages.selected.snapshot(verbose=call.verbose)
    reply = _Reply("take_snapshot")
    if call.filePath:
        path = await pages.write_file(call.filePath, text.encode())
        return reply.say(f"Saved snapshot to {path}.").content()
    return reply.say(text).content()


async def take_screenshot(pages: OwnerPages, call: args.TakeScreenshotArgs) -> Content:
    entry = pages.selected
    if call.format == "webp":
        raise ToolFailure("webp screenshots are not supported here; use png or jpeg.")
    if call.uid and call.fullPage:
        raise ToolFailure("Providing both uid and fullPage is not allowed.")
    quality = call.quality if call.format == "jpeg" else None
    if call.uid:
        data = await pages.locator(call.uid, entry).screenshot(type=call.format, quality=quality)
    else:
        data = await entry.page.screenshot(type=call.format, quality=quality, full_page=call.fullPage)
    what = "the element" if call.uid else "the full page" if call.fullPage else "the current page's viewport"
    reply = _Reply("take_screenshot")
    if call.filePath:
        path = await pages.write_file(call.filePath, data)
        return reply.say(f"Took a screenshot of {what}. Saved screenshot to {path}.").content()
    reply.say(f"Took a screenshot of {what}.")
    from mcp_types import ImageContent  # loaded with the SDK (see the note at the imports)

    reply.images.append(
        ImageContent(type="image", data=base64.b64encode(data).decode(), mime_type=f"image/{call.format}")
    )
    return reply.content()


def _paged(rows: list[dict[str, Any]], size: int | None, index: int | None) -> tuple[list[dict[str, Any]], str]:
    if size is None:
        return rows, f"Showing all {len(rows)}."
    start = (index or 0) * size
    return rows[start : start + size], f"Showing {start + 1}-{min(start + size, len(rows))} of {len(rows)}."


async def list_console_messages(pages: OwnerPages, call: args.ListConsoleMessagesArgs) -> Content:
    entry = pages.selected
    rows = [{"msgid": n, **row} for n, row in enumerate(entry.console(preserved=call.includePreservedMessages), 1)]
    errors = entry.state.errors  # uncaught errors, of any document: too important to leave out
    rows += [{"msgid": len(rows) + n, "type": "error", "text": e["message"]} for n, e in enumerate(errors, 1)]
    if call.types:
        rows = [row for row in rows if row.get("type") in set(call.types)]
    shown, summary = _paged(rows, call.pageSize, call.pageIdx)
    reply = _Reply("list_console_messages").say(f"## Console messages\n{summary}")
    reply.lines += [f"msgid={row['msgid']} [{row.get('type')}] {row.get('text', '')}" for row in shown]
    return reply.content()


async def list_network_requests(pages: OwnerPages, call: args.ListNetworkRequestsArgs) -> Content:
    rows = pages.selected.requests(preserved=call.includePreservedRequests)
    if call.resourceTypes:
        rows = [row for row in rows if row.get("resourceType") in set(call.resourceTypes)]
    shown, summary = _paged(rows, call.pageSize, call.pageIdx)
    reply = _Reply("list_network_requests").say(f"## Network requests\n{summary}")
    for n, row in enumerate(shown, 1):
        status = row.get("status", "failed" if row.get("ok") is False else "pending")
        headers = json.dumps(page_log.redact_headers(row.get("headers") or {}), sort_keys=True)
        reply.say(f"reqid={row.get('id', n)} {row.get('method')} {row.get('url')} [{status}] headers={headers}")
    return reply.content()


async def evaluate_script(pages: OwnerPages, call: args.EvaluateScriptArgs) -> Content:
    if not pages.evaluate_enabled:
        raise ToolFailure("Running page JavaScript is disabled on this server (CONTROL_EVALUATE=0).")
    entry = pages.selected
    handles = [
        await pages.locator(item.uid, entry).element_handle(timeout=ACTION_TIMEOUT_MS) for item in call.args or []
    ]
    # The function runs as written, in the page; its result comes back as JSON text, like the upstream's.
    wrapper = f"async (items) => JSON.stringify(await ({call.function})(...items))"
    results: list[object] = []

    async def evaluate() -> None:
        results.append(await entry.page.evaluate(wrapper, handles))

    if await pages.until_dialog(entry, evaluate()):
        raise ToolFailure(f"{entry.dialog_notice()}")
    result = results[0]
    reply = _Reply("evaluate_script").say("Script ran on page and returned:")
    return reply.say(f"```json\n{result if result is not None else 'undefined'}\n```").content()


# -- input -----------------------------------------------------------------------------------------------------
async def click(pages: OwnerPages, call: args.ClickArgs) -> Content:
    target = pages.locator(call.uid)
    action = target.dblclick if call.dblClick else target.click
    await pages.until_dialog(pages.selected, action(timeout=ACTION_TIMEOUT_MS))
    reply = _Reply("click").say(f"Successfully {'double ' if call.dblClick else ''}clicked on the element")
    return await _after_action(pages, reply, call.includeSnapshot)


async def hover(pages: OwnerPages, call: args.HoverArgs) -> Content:
    await pages.until_dialog(pages.selected, pages.locator(call.uid).hover(timeout=ACTION_TIMEOUT_MS))
    return await _after_action(
        pages, _Reply("hover").say("Successfully hovered over the element"), call.includeSnapshot
    )


async def _fill_one(pages: OwnerPages, uid: str, value: str) -> None:
    target = pages.locator(uid)
    tag = await target.evaluate("(el) => el.tagName.toLowerCase()", timeout=ACTION_TIMEOUT_MS)
    if tag == "select":
        await target.select_option(value, timeout=ACTION_TIMEOUT_MS)
    else:
        await target.fill(value, timeout=ACTION_TIMEOUT_MS)


async def fill(pages: OwnerPages, call: args.FillArgs) -> Content:
    await _fill_one(pages, call.uid, call.value)
    return await _after_action(pages, _Reply("fill").say("Successfully filled out the element"), call.includeSnapshot)


async def fill_form(pages: OwnerPages, call: args.FillFormArgs) -> Content:
    for element in call.elements:
        await _fill_one(pages, element.uid, element.value)
    reply = _Reply("fill_form").say("Successfully filled out the form")
    return await _after_action(pages, reply, call.includeSnapshot)


async def type_text(pages: OwnerPages, call: args.TypeTextArgs) -> Content:
    entry = pages.selected
    blocked = await pages.until_dialog(entry, entry.page.keyboard.type(call.text))
    if call.submitKey and not blocked:
        await pages.until_dialog(entry, entry.page.keyboard.press(call.submitKey))
    return await _after_action(pages, _Reply("type_text").say(f"Typed {len(call.text)} characters."), False)


async def press_key(pages: OwnerPages, call: args.PressKeyArgs) -> Content:
    await pages.until_dialog(pages.selected, pages.selected.page.keyboard.press(call.key))
    reply = _Reply("press_key").say(f"Successfully pressed key: {call.key}")
    return await _after_action(pages, reply, call.includeSnapshot)


async def handle_dialog(pages: OwnerPages, call: args.HandleDialogArgs) -> Content:
    entry = pages.selected
    if not entry.state.dialogs_pending:
        raise ToolFailure("No open dialog found")
    accept = call.action == "accept"
    await page_log.answer_dialog(entry.page, entry.state, accept=accept, prompt_text=call.promptText, dialog_id=None)
    reply = _Reply("handle_dialog").say(f"Successfully {'accepted' if accept else 'dismissed'} the dialog")
    return await _with_pages(pages, reply)


def _tool(
    name: str,
    description: str,
    arguments: type[BaseModel],
    run: Callable[[OwnerPages, Any], Awaitable[Content]],
    **extra: bool,
) -> BrowserTool:
    assert issubclass(arguments, args.ToolArgs)
    return BrowserTool(name, description, arguments, run, **extra)


CATALOG: tuple[BrowserTool, ...] = (
    _tool("list_pages", "Get a list of pages open in the browser.", args.ListPagesArgs, list_pages, read_only=True),
    _tool("new_page", "Creates a new page and loads a URL in it.", args.NewPageArgs, new_page),
    _tool("select_page", "Select a page as a context for future tool calls.", args.SelectPageArgs, select_page),
    _tool(
        "close_page", "Closes the page by its id. The last open page cannot be closed.", args.ClosePageArgs, close_page
    ),
    _tool(
        "navigate_page",
        "Navigates the currently selected page to a URL, back, forward or reloads it.",
        args.NavigatePageArgs,
        navigate_page,
    ),
    _tool(
        "wait_for",
        "Wait for the specified text to appear on the selected page.",
        args.WaitForArgs,
        wait_for,
        read_only=True,
    ),
    _tool(
        "take_snapshot",
        "Take a text snapshot of the currently selected page based on the a11y tree. The snapshot lists page "
        "elements along with a unique identifier (uid). Always use the latest snapshot.",
        args.TakeSnapshotArgs,
        take_snapshot,
        read_only=True,
    ),
    _tool(
        "take_screenshot",
        "Take a screenshot of the page or element.",
        args.TakeScreenshotArgs,
        take_screenshot,
        read_only=True,
    ),
    _tool("click", "Clicks on the provided element", args.ClickArgs, click),
    _tool("hover", "Hover over the provided element", args.HoverArgs, hover),
    _tool(
        "fill", "Type text into an input, text area or select an option from a <select> element.", args.FillArgs, fill
    ),
    _tool("fill_form", "Fill out multiple form elements at once", args.FillFormArgs, fill_form),
    _tool("type_text", "Type text with the keyboard into the focused element.", args.TypeTextArgs, type_text),
    _tool("press_key", "Press a key or key combination on the selected page.", args.PressKeyArgs, press_key),
    _tool(
        "handle_dialog",
        "If a browser dialog was opened, use this command to handle it",
        args.HandleDialogArgs,
        handle_dialog,
    ),
    _tool(
        "evaluate_script",
        "Evaluate a JavaScript function inside the currently selected page. Returns the response as JSON, so "
        "returned values have to be JSON-serializable.",
        args.EvaluateScriptArgs,
        evaluate_script,
    ),
    _tool(
        "list_console_messages",
        "List the console messages of the currently selected page.",
        args.ListConsoleMessagesArgs,
        list_console_messages,
        read_only=True,
    ),
    _tool(
        "list_network_requests",
        "List the requests of the currently selected page (credential headers redacted).",
        args.ListNetworkRequestsArgs,
        list_network_requests,
        read_only=True,
    ),
    _tool(
        "resize_page", "Resizes the selected page's viewport to the given dimensions.", args.ResizePageArgs, resize_page
    ),
)
