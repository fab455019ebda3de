"""``http_fetch(url, method="GET", headers?, body?)`` (spec §11.4): one server-side request under the network
policy; the body is always saved to ``fetch_<host_path>.<ext>`` and delivered through the envelope."""

from __future__ import annotations

import json
import mimetypes
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from browser_use.agent.views import ActionResult
from browser_use.filesystem.file_system import FileSystem
from pydantic import BaseModel, Field

from openbrowse.agent.files.delivery import envelope, safe_name, save
from openbrowse.agent.safe_fetch import FETCH_TIMEOUT, FetchedResponse, FetchFailed, fetch
from openbrowse.network.policy import NetworkRefused

if TYPE_CHECKING:
    from browser_use import Tools

    from openbrowse.agent.tools.context import ToolContext

_EXTENSIONS = {
    "application/json": "json",
    "application/ld+json": "json",
    "text/html": "html",
    "application/xhtml+xml": "html",
    "text/plain": "txt",
    "text/csv": "csv",
    "text/markdown": "md",
    "application/xml": "xml",
    "text/xml": "xml",
    "application/rss+xml": "xml",
    "application/atom+xml": "xml",
    "application/pdf": "pdf",
}
_TEXT_TYPES = ("text/", "application/json", "application/ld+json", "application/xml", "application/javascript")


class HttpFetchParams(BaseModel):
    url: str = Field(description="The http(s) URL to request.")
    method: str = Field(default="GET", description="HTTP method.")
    headers: dict[str, str] | None = Field(default=None, description="Extra request headers.")
    body: str | None = Field(default=None, description="Request body (e.g. JSON text for a POST).")


def extension_for(response: FetchedResponse) -> str:
    known = _EXTENSIONS.get(response.content_type)
    if known:
        return known
    if response.content_type.endswith("+json"):
        return "json"
    head = response.body[:200].lstrip()
    if head[:1] in (b"{", b"["):
        return "json"
    if head[:1] == b"<":
        return "html" if b"html" in head.lower() else "xml"
    guessed = mimetypes.guess_extension(response.content_type or "") or ".txt"
    return guessed.lstrip(".") if response.content_type and not is_text(response) else "txt"


def is_text(response: FetchedResponse) -> bool:
    kind = response.content_type
    return not kind or kind.startswith(_TEXT_TYPES) or kind.endswith(("+json", "+xml"))


def file_name_for(url: str, extension: str) -> str:
    parts = urlsplit(url)
    stem = safe_name(f"{parts.hostname or 'host'}{parts.path}".rstrip("/"))
    return f"fetch_{stem}.{extension}"


async def run_http_fetch(ctx: ToolContext, params: HttpFetchParams, file_system: FileSystem | None) -> str:
    """The tool's reply text; raises RuntimeError with one clear sentence when the request cannot be made."""
    try:
        response = await fetch(
            ctx.network,
            params.url,
            method=params.method,
            headers=params.headers,
            body=params.body,
            timeout=FETCH_TIMEOUT,
            route=ctx.proxy,
        )
    except (NetworkRefused, FetchFailed) as exc:
        raise RuntimeError(str(exc)) from exc
    extension = extension_for(response)
    name = file_name_for(response.url, extension)
    text = response.text() if is_text(response) else None
    save(ctx.files_dir, name, text if text is not None else response.body, file_system)
    note = f"HTTP {response.status} {response.content_type or 'unknown type'}, {len(response.body)} bytes"
    if response.redirects:
        note += f", after {len(response.redirects)} redirect(s) to {response.url}"
    if response.truncated:
        note += ", body cut at the size limit"
    note += f"; saved as {name}."
    data: Any = text if text is not None else f"<{len(response.body)} bytes of {response.content_type}>"
    if text is not None and extension == "json":
        try:
            data = json.loads(text)
        except ValueError:
            data = text
    return envelope(note, name, data)


def register_http_fetch(tools: Tools[Any], ctx: ToolContext) -> None:
    async def http_fetch(params: HttpFetchParams, file_system: FileSystem) -> ActionResult:
        reply = await run_http_fetch(ctx, params, file_system)
        return ActionResult(
            extracted_content=reply,
            long_term_memory=f"http_fetch {params.url[:200]}",
            include_extracted_content_only_once=True,
        )

    http_fetch.__annotations__["file_system"] = FileSystem  # browser-use compares the injected type, not a string
    tools.action(
        "Make one server-side HTTP request (no browser); the response body is saved to a file and returned "
        "inline when short. Use it for JSON/XML/feeds or files the page links to, not to call a site's backend "
        "API in place of reading its pages.",
        param_model=HttpFetchParams,
    )(http_fetch)
