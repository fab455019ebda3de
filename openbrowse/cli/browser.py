"""``openbrowse browser <id> <subcommand>``: drive a raw browser or a session's browser through its control API.

The commands follow the seed's ``openclaw browser …`` (spec §20): tabs, navigation, snapshots with refs, and ref
actions through ``POST {B}/act``. Files, logs and browser state are in ``browser_state.py``; the options every
subcommand shares in ``browser_command.py``.
"""

from __future__ import annotations

from typing import Any, TextIO
from urllib.parse import quote

import click

from openbrowse.cli.browser_client import ControlClient, TargetKind
from openbrowse.cli.browser_command import Shown, TargetOptions, control_command, json_argument, target_id_option
from openbrowse.cli.browser_render import STATUS_KEYS, act_outcome, batch_lines, pairs_table, tabs_table, value_text
from openbrowse.cli.browser_state import STATE_COMMANDS
from openbrowse.cli.client import connection_options
from openbrowse.cli.sanitize import terminal_safe

__all__ = ["browser"]


@click.group()
@click.argument("target_id", metavar="ID")
@click.option("--browser", "kind", flag_value="browsers", help="ID is a raw browser (skip the lookup).")
@click.option("--session", "kind", flag_value="sessions", help="ID is an agent session (skip the lookup).")
@click.option("--json", "as_json", is_flag=True, help="Print the API's JSON body (for every subcommand).")
@connection_options
@click.pass_context
def browser(
    ctx: click.Context, target_id: str, kind: TargetKind | None, as_json: bool, url: str, api_key: str | None
) -> None:
    """Drive browser ID directly: a raw browser (/v3/browsers) or an agent session's browser.

    ID is looked up as a raw browser first, then as a session. Actions take refs from `snapshot`
    (12, e12 or ax12); take a new snapshot after the page changes.
    """
    ctx.obj = TargetOptions(target_id=target_id, kind=kind, url=url, api_key=api_key, as_json=as_json)


def acted(body: dict[str, Any], done: str) -> Shown:
    """An act answer: what was done, or exit code 1 with the dialog that blocked it."""
    text, blocked = act_outcome(body, done)
    return Shown(body, text or None, exit_code=1 if blocked else 0, note=blocked)


# -- status and tabs ---------------------------------------------------------------------------------------------
@control_command("status")
def status(control: ControlClient) -> Shown:
    """Whether the browser is live and controllable, the engine and the active tab."""
    body = control.get("")
    shown = {**body, "tabs": len(body.get("tabs") or [])} if isinstance(body, dict) else {}
    return Shown(body, pairs_table(shown, (*STATUS_KEYS, "tabs")))


@control_command("tabs")
def tabs(control: ControlClient) -> Shown:
    """The open tabs; the handle (t1), targetId or label selects one in --target-id."""
    body = control.get("/tabs")
    if not body.get("running", True):
        return Shown(body, "The browser is not running.")
    return Shown(body, tabs_table(body.get("tabs") or []))


@control_command("open")
@click.argument("url")
@click.option("--label", help="A name for the tab, usable as its --target-id.")
def open_tab(control: ControlClient, url: str, label: str | None) -> Shown:
    """Open URL in a new tab."""
    tab = control.post("/tabs/open", {"url": url, "label": label})
    handle = tab.get("tabId") or tab.get("suggestedTargetId") or tab.get("targetId")
    return Shown(tab, terminal_safe(f"opened {handle} · {tab.get('url', url)}"))


@control_command("focus")
@click.argument("target_id", metavar="TARGET_ID")
def focus(control: ControlClient, target_id: str) -> Shown:
    """Bring a tab to the front (targetId, handle or label)."""
    body = control.post("/tabs/focus", {"targetId": target_id})
    return Shown(body, terminal_safe(f"focused {body.get('targetId', target_id)}"))


@control_command("close-tab")
@click.argument("target_id", metavar="TARGET_ID")
def close_tab(control: ControlClient, target_id: str) -> Shown:
    """Close a tab (targetId, handle or label)."""
    body = control.delete(f"/tabs/{quote(target_id, safe='')}")
    return Shown(body, terminal_safe(f"closed {target_id}"))


@control_command("navigate")
@click.argument("url")
@target_id_option
def navigate(control: ControlClient, url: str, target_id: str | None) -> Shown:
    """Load URL in the tab (http(s) or about:blank; the server's network policy applies)."""
    body = control.post("/navigate", {"url": url, "targetId": target_id})
    return Shown(body, terminal_safe(f"navigated · {body.get('url', url)}"))


# -- snapshot ------------------------------------------------------------------------------------------------------
@control_command("snapshot")
@click.option("--format", "snapshot_format", type=click.Choice(["ai", "aria"]), help="ai (refs 12) or aria (ax12).")
@click.option("--interactive", is_flag=True, help="Only interactive elements (role refs e12).")
@click.option("--compact", is_flag=True, help="Drop structural noise (role refs e12).")
@click.option("--depth", type=click.IntRange(min=0), help="Tree depth limit (role refs e12).")
@click.option("--selector", help="CSS selector the snapshot is limited to.")
@click.option("--frame", help="Iframe selector to snapshot; its refs stay scoped to it.")
@click.option("--max-chars", type=click.IntRange(min=1), help="Character cap (ai default 40,000).")
@click.option("--limit", type=click.IntRange(min=1), help="Node cap for --format aria.")
@click.option("--efficient", is_flag=True, help="The compact role-snapshot preset (mode=efficient).")
@target_id_option
def snapshot(
    control: ControlClient,
    snapshot_format: str | None,
    interactive: bool,
    compact: bool,
    depth: int | None,
    selector: str | None,
    frame: str | None,
    max_chars: int | None,
    limit: int | None,
    efficient: bool,
    target_id: str | None,
) -> Shown:
    """The page as text with refs for click, type and the other actions."""
    body = control.get(
        "/snapshot",
        format=snapshot_format,
        targetId=target_id,
        interactive=interactive or None,
        compact=compact or None,
        depth=depth,
        selector=selector,
        frame=frame,
        maxChars=max_chars,
        limit=limit,
        mode="efficient" if efficient else None,
    )
    if body.get("blockedByDialog"):
        return acted(body, "")
    note = (
        "the snapshot was truncated: narrow it with --selector or raise --max-chars" if body.get("truncated") else None
    )
    return Shown(body, terminal_safe(str(body.get("snapshot") or "")), note=note)


# -- actions (POST {B}/act) ------------------------------------------------------------------------------------------
@control_command("click")
@click.argument("ref")
@click.option("--double", is_flag=True, help="Double-click.")
@target_id_option
def click_ref(control: ControlClient, ref: str, double: bool, target_id: str | None) -> Shown:
    """Click the element REF (from snapshot)."""
    return acted(control.act("click", ref=ref, double=double or None, targetId=target_id), f"clicked {ref}")


@control_command("type")
@click.argument("ref")
@click.argument("text")
@click.option("--submit", is_flag=True, help="Press Enter afterwards.")
@target_id_option
def type_text(control: ControlClient, ref: str, text: str, submit: bool, target_id: str | None) -> Shown:
    """Type TEXT into the element REF."""
    body = control.act("type", ref=ref, text=text, submit=submit or None, targetId=target_id)
    return acted(body, f"typed into {ref}")


@control_command("press")
@click.argument("key")
@target_id_option
def press(control: ControlClient, key: str, target_id: str | None) -> Shown:
    """Press KEY (Enter, Tab, ArrowDown, Control+a, …) in the focused element."""
    return acted(control.act("press", key=key, targetId=target_id), f"pressed {key}")


@control_command("hover")
@click.argument("ref")
@target_id_option
def hover(control: ControlClient, ref: str, target_id: str | None) -> Shown:
    """Move the mouse over the element REF."""
    return acted(control.act("hover", ref=ref, targetId=target_id), f"hovered {ref}")


@control_command("select")
@click.argument("ref")
@click.argument("values", nargs=-1, required=True)
@target_id_option
def select(control: ControlClient, ref: str, values: tuple[str, ...], target_id: str | None) -> Shown:
    """Choose VALUES in the select element REF."""
    body = control.act("select", ref=ref, values=list(values), targetId=target_id)
    return acted(body, f"selected {', '.join(values)} in {ref}")


@control_command("fill")
@click.option("--fields", required=True, help='JSON array, e.g. \'[{"ref":"e3","type":"text","value":"Ada"}]\'.')
@target_id_option
def fill(control: ControlClient, fields: str, target_id: str | None) -> Shown:
    """Fill several form fields at once."""
    entries = json_argument(fields, "--fields", kind=list)
    return acted(control.act("fill", fields=entries, targetId=target_id), f"filled {len(entries)} fields")


@control_command("wait")
@click.option("--text", help="Until this text is on the page.")
@click.option("--text-gone", help="Until this text is no longer on the page.")
@click.option("--url", "url_glob", help="Until the URL matches this glob (**/dash).")
@click.option("--load-state", type=click.Choice(["load", "domcontentloaded", "networkidle"]))
@click.option("--selector", help="Until this CSS selector is visible.")
@click.option("--fn", help="Until this JavaScript predicate is true (refused when CONTROL_EVALUATE=0).")
@click.option("--time-ms", type=click.IntRange(min=0), help="A fixed pause.")
@click.option("--timeout-ms", type=click.IntRange(min=1), help="Give up after this long.")
@target_id_option
def wait(
    control: ControlClient,
    text: str | None,
    text_gone: str | None,
    url_glob: str | None,
    load_state: str | None,
    selector: str | None,
    fn: str | None,
    time_ms: int | None,
    timeout_ms: int | None,
    target_id: str | None,
) -> Shown:
    """Wait for text, a URL, a load state, a selector, a predicate or a time (they combine)."""
    conditions: dict[str, Any] = {"text": text, "textGone": text_gone, "url": url_glob, "loadState": load_state}
    conditions.update({"selector": selector, "fn": fn, "timeMs": time_ms})
    if all(value is None for value in conditions.values()):
        raise click.UsageError(
            "say what to wait for: --text, --text-gone, --url, --load-state, --selector, --fn or --time-ms"
        )
    return acted(control.act("wait", **conditions, timeoutMs=timeout_ms, targetId=target_id), "done waiting")


@control_command("evaluate")
@click.option("--fn", required=True, help="A function, an expression or a statement body (use return).")
@click.option("--ref", help="Pass this element to the function as its argument.")
@target_id_option
def evaluate(control: ControlClient, fn: str, ref: str | None, target_id: str | None) -> Shown:
    """Run JavaScript in the page and print its result (refused when CONTROL_EVALUATE=0)."""
    body = control.act("evaluate", fn=fn, ref=ref, targetId=target_id)
    if body.get("blockedByDialog"):
        return acted(body, "")
    return Shown(body, value_text(body.get("result")))


@control_command("batch")
@click.option("--actions", help='JSON array of act requests, e.g. \'[{"kind":"click","ref":"e3"}]\'.')
@click.option("--actions-file", type=click.File("r"), help="Read the JSON array from a file (- for stdin).")
@click.option("--continue", "keep_going", is_flag=True, help="Run every action even after one fails.")
@target_id_option
def batch(
    control: ControlClient, actions: str | None, actions_file: TextIO | None, keep_going: bool, target_id: str | None
) -> Shown:
    """Run up to 100 actions in one call; it stops at the first failure, a navigation or a closed page."""
    if (actions is None) == (actions_file is None):
        raise click.UsageError("give the actions with exactly one of --actions or --actions-file")
    if actions_file is not None:
        plan = json_argument(actions_file.read(), "--actions-file", kind=list)
    else:
        plan = json_argument(actions or "", "--actions", kind=list)
    body = control.act("batch", actions=plan, stopOnError=not keep_going, targetId=target_id)
    if body.get("blockedByDialog"):
        return acted(body, "")
    lines, failed = batch_lines(body)
    note = f"{failed} of {len(body.get('results') or [])} actions failed" if failed else None
    return Shown(body, lines or None, exit_code=1 if failed or body.get("ok") is False else 0, note=note)


for command in (
    status,
    tabs,
    open_tab,
    focus,
    close_tab,
    navigate,
    snapshot,
    click_ref,
    type_text,
    press,
    hover,
    select,
    fill,
    wait,
    evaluate,
    batch,
    *STATE_COMMANDS,
):
    browser.add_command(command)
