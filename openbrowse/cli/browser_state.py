"""``openbrowse browser <id> …`` for files, logs and browser state: screenshots, PDF, extraction, console, dialogs,
uploads, downloads, cookies, storage and the ``set …`` overrides (spec §20.2).

Files land in the target's file area on the server's host (§22.2); the CLI prints their path there and their
files URL (§22.3), which works from anywhere with the API key.
"""

from __future__ import annotations

from typing import Any

import click

from openbrowse.cli.browser_client import ControlClient
from openbrowse.cli.browser_command import Shown, control_command, control_group, json_argument, target_id_option
from openbrowse.cli.browser_render import cookies_table, entry_lines, file_lines, storage_table, value_text
from openbrowse.cli.browser_settings import settings
from openbrowse.cli.sanitize import terminal_safe

__all__ = ["STATE_COMMANDS"]


def _saved(control: ControlClient, body: dict[str, Any]) -> Shown:
    url = body.get("url")
    return Shown(body, file_lines(body, control.absolute_url(str(url)) if url else None))


# -- files ---------------------------------------------------------------------------------------------------------
@control_command("screenshot")
@click.option("--full-page", is_flag=True, help="The whole scrollable page, not just the viewport.")
@click.option("--ref", help="Only this element (a snapshot ref); not with --full-page.")
@click.option("--type", "image_type", type=click.Choice(["png", "jpeg"]), default="png", show_default=True)
@target_id_option
def screenshot(
    control: ControlClient, full_page: bool, ref: str | None, image_type: str, target_id: str | None
) -> Shown:
    """Save a screenshot in the browser's screenshots/ area; print its path and URL."""
    body = control.post(
        "/screenshot", {"targetId": target_id, "fullPage": full_page or None, "ref": ref, "type": image_type}
    )
    return _saved(control, body)


@control_command("pdf")
@target_id_option
def pdf(control: ControlClient, target_id: str | None) -> Shown:
    """Print the page to PDF; print its path and URL."""
    return _saved(control, control.post("/pdf", {"targetId": target_id}))


@control_command("extract")
@click.option("--query", help="A question answered from the page by one model call (cost counted).")
@click.option("--selector", help="Only the subtree matching this CSS selector (no match is an error).")
@click.option("--ignore-selector", "ignore_selectors", multiple=True, help="Leave these subtrees out (repeatable).")
@click.option("--schema", help="JSON Schema for a structured answer to --query.")
@click.option("--timeout-ms", type=click.IntRange(min=1))
@target_id_option
def extract(
    control: ControlClient,
    query: str | None,
    selector: str | None,
    ignore_selectors: tuple[str, ...],
    schema: str | None,
    timeout_ms: int | None,
    target_id: str | None,
) -> Shown:
    """The page's readable text, or with --query the answer to a question about it."""
    body = control.post(
        "/extract",
        {
            "query": query,
            "selector": selector,
            "ignoreSelectors": list(ignore_selectors) or None,
            "schema": json_argument(schema, "--schema", kind=dict) if schema is not None else None,
            "timeoutMs": timeout_ms,
            "targetId": target_id,
        },
    )
    answer = next((body[key] for key in ("json", "result", "answer", "text") if body.get(key) is not None), "")
    return Shown(body, value_text(answer))


# -- logs ----------------------------------------------------------------------------------------------------------
@control_command("console")
@click.option("--level", type=click.Choice(["debug", "info", "log", "warning", "error"]), help="Minimum level.")
@click.option("--clear", is_flag=True, help="Empty the buffer after reading.")
@target_id_option
def console(control: ControlClient, level: str | None, clear: bool, target_id: str | None) -> Shown:
    """The tab's console messages (the latest 500)."""
    body = control.get("/console", level=level, clear=clear or None, targetId=target_id)
    return Shown(body, entry_lines(body))


@control_command("errors")
@click.option("--clear", is_flag=True, help="Empty the buffer after reading.")
@target_id_option
def errors(control: ControlClient, clear: bool, target_id: str | None) -> Shown:
    """The tab's uncaught page errors."""
    body = control.get("/errors", clear=clear or None, targetId=target_id)
    return Shown(body, entry_lines(body))


@control_command("requests")
@click.option("--filter", "url_filter", help="Only requests whose URL contains this.")
@click.option("--clear", is_flag=True, help="Empty the buffer after reading.")
@target_id_option
def requests(control: ControlClient, url_filter: str | None, clear: bool, target_id: str | None) -> Shown:
    """The tab's network requests (authorization headers redacted)."""
    body = control.get("/requests", filter=url_filter, clear=clear or None, targetId=target_id)
    return Shown(body, entry_lines(body))


# -- dialogs, uploads, downloads -----------------------------------------------------------------------------------
@control_command("dialog")
@click.option("--accept/--dismiss", required=True, default=None, help="How to answer the dialog.")
@click.option("--prompt-text", help="The answer to a prompt() dialog.")
@click.option("--dialog-id", help="Answer this pending dialog now (from blockedByDialog) instead of the next one.")
def dialog(control: ControlClient, accept: bool, prompt_text: str | None, dialog_id: str | None) -> Shown:
    """Arm the answer to the next dialog (run it before the click that opens one), or answer a pending one."""
    body = control.post("/hooks/dialog", {"accept": accept, "promptText": prompt_text, "dialogId": dialog_id})
    verb = "accepted" if accept else "dismissed"
    return Shown(body, f"dialog {terminal_safe(dialog_id)} {verb}" if dialog_id else f"the next dialog will be {verb}")


@control_command("upload")
@click.argument("paths", nargs=-1, required=True)
@click.option("--ref", help="Click this element to open the chooser and answer it in one call.")
@click.option("--input-ref", help="Set the files on this file input directly.")
@target_id_option
def upload(
    control: ControlClient, paths: tuple[str, ...], ref: str | None, input_ref: str | None, target_id: str | None
) -> Shown:
    """Answer a file chooser with PATHS from the browser's uploads/ area (PUT …/uploads/{name} first)."""
    if ref and input_ref:
        raise click.UsageError("give --ref or --input-ref, not both")
    body = control.post(
        "/hooks/file-chooser", {"paths": list(paths), "ref": ref, "inputRef": input_ref, "targetId": target_id}
    )
    return Shown(body, f"{len(paths)} file{'s' if len(paths) != 1 else ''} set for the file chooser")


@control_command("download")
@click.argument("ref")
@click.option("--path", help="File name inside the browser's downloads/ area.")
@target_id_option
def download(control: ControlClient, ref: str, path: str | None, target_id: str | None) -> Shown:
    """Click REF and save the download it starts."""
    return _saved(control, control.post("/download", {"ref": ref, "path": path, "targetId": target_id}))


@control_command("wait-download")
@click.option("--path", help="File name inside the browser's downloads/ area.")
@click.option("--timeout-ms", type=click.IntRange(min=1))
@target_id_option
def wait_download(control: ControlClient, path: str | None, timeout_ms: int | None, target_id: str | None) -> Shown:
    """Wait for the next download and save it."""
    body = control.post("/wait/download", {"path": path, "timeoutMs": timeout_ms, "targetId": target_id})
    return _saved(control, body)


# -- cookies and storage -------------------------------------------------------------------------------------------
@control_group("cookies")
@target_id_option
def cookies(control: ControlClient, target_id: str | None) -> Shown:
    """The browser's cookies; `cookies set` and `cookies clear` change them."""
    body = control.get("/cookies", targetId=target_id)
    return Shown(body, cookies_table(body.get("cookies") or []))


@control_command("set")
@click.argument("name", required=False)
@click.argument("value", required=False)
@click.option("--url", "cookie_url", help="The URL the cookie belongs to (or give --domain).")
@click.option("--domain", help="The cookie's domain.")
@click.option("--path", "cookie_path", help="The cookie's path.")
@click.option("--cookie-json", help="The cookie as a JSON object, or a JSON array of cookies.")
def cookies_set(
    control: ControlClient,
    name: str | None,
    value: str | None,
    cookie_url: str | None,
    domain: str | None,
    cookie_path: str | None,
    cookie_json: str | None,
) -> Shown:
    """Add cookies: NAME VALUE with --url or --domain, or --cookie-json."""
    if cookie_json is not None:
        if name is not None:
            raise click.UsageError("give NAME VALUE or --cookie-json, not both")
        parsed = json_argument(cookie_json, "--cookie-json")
        if isinstance(parsed, list):
            body = control.post("/cookies/set-many", {"cookies": parsed})
        elif isinstance(parsed, dict):
            body = control.post("/cookies/set", {"cookie": parsed})
        else:
            raise click.BadParameter("must be a JSON object or array", param_hint="--cookie-json")
    elif name is not None and value is not None:
        cookie = {"name": name, "value": value, "url": cookie_url, "domain": domain, "path": cookie_path}
        body = control.post("/cookies/set", {"cookie": {key: item for key, item in cookie.items() if item is not None}})
    else:
        raise click.UsageError("give NAME VALUE (with --url or --domain) or --cookie-json")
    return Shown(body, f"{body.get('added', 1)} cookie(s) set")


@control_command("clear")
@click.option("--name", help="Only cookies with this name.")
@click.option("--domain", help="Only cookies of this domain.")
def cookies_clear(control: ControlClient, name: str | None, domain: str | None) -> Shown:
    """Delete cookies (all of them unless --name or --domain narrow it)."""
    body = control.post("/cookies/clear", {"name": name, "domain": domain})
    return Shown(body, "cookies cleared")


cookies.add_command(cookies_set)
cookies.add_command(cookies_clear)


@control_command("storage")
@click.argument("kind", type=click.Choice(["local", "session"]))
@click.argument("action", type=click.Choice(["get", "set", "clear"]), default="get")
@click.argument("arguments", nargs=-1)
@target_id_option
def storage(control: ControlClient, kind: str, action: str, arguments: tuple[str, ...], target_id: str | None) -> Shown:
    """localStorage or sessionStorage of the tab's origin: get [KEY], set KEY VALUE, clear."""
    expected = {"get": (0, 1), "set": (2, 2), "clear": (0, 0)}[action]
    if not expected[0] <= len(arguments) <= expected[1]:
        raise click.UsageError({"get": "get [KEY]", "set": "set KEY VALUE", "clear": "clear"}[action])
    if action == "get":
        body = control.get(f"/storage/{kind}", key=arguments[0] if arguments else None, targetId=target_id)
        return Shown(body, storage_table(body))
    if action == "set":
        key, value = arguments
        body = control.post(f"/storage/{kind}/set", {"key": key, "value": value, "targetId": target_id})
        return Shown(body, terminal_safe(f"{kind}Storage {key} set"))
    body = control.post(f"/storage/{kind}/clear", {"targetId": target_id})
    return Shown(body, f"{kind}Storage cleared")


STATE_COMMANDS: tuple[click.Command, ...] = (
    screenshot,
    pdf,
    extract,
    console,
    errors,
    requests,
    dialog,
    upload,
    download,
    wait_download,
    cookies,
    storage,
    settings,
)
