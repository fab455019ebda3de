"""The browser tools' arguments, named and shaped as chrome-devtools-mcp's (spec §23.3); their JSON Schemas are
what ``tools/list`` shows. Every tool also takes ``browserId`` (ours): drive that raw browser instead of the
caller's own context in the shared browser; and ``contextId`` (ours): run in the browser context that handle names
(``open_browser_context``), which is how a client of the stateless MCP revision keeps its pages between calls."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "ClickArgs",
    "ClosePageArgs",
    "EvaluateScriptArgs",
    "FillArgs",
    "FillFormArgs",
    "FormElement",
    "HandleDialogArgs",
    "HoverArgs",
    "ListConsoleMessagesArgs",
    "ListNetworkRequestsArgs",
    "ListPagesArgs",
    "NavigatePageArgs",
    "NewPageArgs",
    "PressKeyArgs",
    "ResizePageArgs",
    "ScriptArg",
    "SelectPageArgs",
    "TakeScreenshotArgs",
    "TakeSnapshotArgs",
    "ToolArgs",
    "TypeTextArgs",
    "WaitForArgs",
]

UID = "The uid of an element on the page from the page content snapshot"
TIMEOUT = "Maximum wait time in milliseconds. If set to 0, the default timeout will be used."
INCLUDE_SNAPSHOT = "Whether to include a snapshot in the response. Default is false."


class ToolArgs(BaseModel):
    model_config = ConfigDict(extra="ignore")

    browserId: str | None = Field(
        default=None,
        description="A raw browser's id (POST /v3/browsers) to drive instead of your own page in the shared browser.",
    )
    contextId: str | None = Field(
        default=None,
        description="Your browser context's handle from open_browser_context: the call runs on its pages. Needed "
        "on every call by clients without an MCP session; optional in a session, whose own context is the default.",
    )


class ListPagesArgs(ToolArgs):
    pass


class NewPageArgs(ToolArgs):
    url: str = Field(description="URL to load in a new page.")
    background: bool = Field(default=False, description="Whether to open the page in the background (not selected).")
    timeout: int = Field(default=0, ge=0, description=TIMEOUT)


class SelectPageArgs(ToolArgs):
    pageId: int = Field(description="The ID of the page to select. Call list_pages to get available pages.")
    bringToFront: bool = Field(default=False, description="Whether to focus the page and bring it to the top.")


class ClosePageArgs(ToolArgs):
    pageId: int = Field(description="The ID of the page to close. Call list_pages to list pages.")


class NavigatePageArgs(ToolArgs):
    type: Literal["url", "back", "forward", "reload"] | None = Field(
        default=None, description="Navigate the page by URL, back or forward in history, or reload."
    )
    url: str | None = Field(default=None, description="Target URL (only type=url)")
    ignoreCache: bool = Field(default=False, description="Whether to ignore cache on reload.")
    timeout: int = Field(default=0, ge=0, description=TIMEOUT)


class WaitForArgs(ToolArgs):
    text: str = Field(description="Text to appear on the page")
    timeout: int = Field(default=0, ge=0, description=TIMEOUT)


class TakeSnapshotArgs(ToolArgs):
    verbose: bool = Field(
        default=False, description="Whether to include all possible information available in the full a11y tree."
    )
    filePath: str | None = Field(
        default=None, description="A file name to save the snapshot to (in your file area) instead of returning it."
    )


class TakeScreenshotArgs(ToolArgs):
    format: Literal["png", "jpeg", "webp"] = Field(default="png", description='Type of format. Default is "png"')
    quality: int | None = Field(
        default=None, ge=0, le=100, description="Compression quality for JPEG (0-100). Ignored for PNG."
    )
    uid: str | None = Field(default=None, description=f"{UID}. If omitted takes a page screenshot.")
    fullPage: bool = Field(
        default=False, description="Take a screenshot of the full page instead of the viewport. Incompatible with uid."
    )
    filePath: str | None = Field(
        default=None, description="A file name to save the screenshot to (in your file area) instead of attaching it."
    )


class ClickArgs(ToolArgs):
    uid: str = Field(description=UID)
    dblClick: bool = Field(default=False, description="Set to true for double clicks. Default is false.")
    includeSnapshot: bool = Field(default=False, description=INCLUDE_SNAPSHOT)


class HoverArgs(ToolArgs):
    uid: str = Field(description=UID)
    includeSnapshot: bool = Field(default=False, description=INCLUDE_SNAPSHOT)


class FillArgs(ToolArgs):
    uid: str = Field(description=UID)
    value: str = Field(description="The value to fill in")
    includeSnapshot: bool = Field(default=False, description=INCLUDE_SNAPSHOT)


class FormElement(BaseModel):
    uid: str = Field(description="The uid of the element to fill out")
    value: str = Field(description="Value for the element")


class FillFormArgs(ToolArgs):
    elements: list[FormElement] = Field(min_length=1, description="Elements from snapshot to fill out.")
    includeSnapshot: bool = Field(default=False, description=INCLUDE_SNAPSHOT)


class TypeTextArgs(ToolArgs):
    text: str = Field(description="The text to type into the focused element")
    submitKey: str | None = Field(default=None, description='Optional key to press after typing, e.g. "Enter".')


class PressKeyArgs(ToolArgs):
    key: str = Field(description='A key or a combination (e.g. "Enter", "Control+A", "Control+Shift+R").')
    includeSnapshot: bool = Field(default=False, description=INCLUDE_SNAPSHOT)


class HandleDialogArgs(ToolArgs):
    action: Literal["accept", "dismiss"] = Field(description="Whether to dismiss or accept the dialog")
    promptText: str | None = Field(default=None, description="Optional prompt text to enter into the dialog.")


class ScriptArg(BaseModel):
    uid: str = Field(description="The uid of an element on the page from the page content snapshot")


class EvaluateScriptArgs(ToolArgs):
    function: str = Field(
        description="A JavaScript function declaration to run in the selected page, e.g. "
        "`() => document.title` or `(el) => el.innerText` with args. The result must be JSON-serializable."
    )
    args: list[ScriptArg] | None = Field(default=None, description="Elements (by uid) to pass to the function.")


class ListConsoleMessagesArgs(ToolArgs):
    pageSize: int | None = Field(default=None, ge=1, description="Maximum number of messages to return.")
    pageIdx: int | None = Field(default=None, ge=0, description="Page number to return (0-based).")
    types: list[str] | None = Field(default=None, description="Only messages of these types (log, error, warn…).")
    includePreservedMessages: bool = Field(
        default=False, description="Also return messages of earlier documents of the page."
    )


class ListNetworkRequestsArgs(ToolArgs):
    pageSize: int | None = Field(default=None, ge=1, description="Maximum number of requests to return.")
    pageIdx: int | None = Field(default=None, ge=0, description="Page number to return (0-based).")
    resourceTypes: list[str] | None = Field(
        default=None, description="Only requests of these resource types (document, script, xhr, fetch…)."
    )
    includePreservedRequests: bool = Field(
        default=False, description="Also return requests of earlier documents of the page."
    )


class ResizePageArgs(ToolArgs):
    width: int = Field(ge=100, le=7680, description="Page width")
    height: int = Field(ge=100, le=4320, description="Page height")
