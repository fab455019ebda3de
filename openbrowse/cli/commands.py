"""The client commands. Exit codes: 0 the task succeeded, 1 it did not, 2 usage or connection error."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.live import Live

from openbrowse.cli.browser import browser
from openbrowse.cli.client import ApiClient, CliError, connection_options
from openbrowse.cli.follow import follow
from openbrowse.cli.render import (
    ProgressLine,
    browsers_table,
    message_line,
    outcome_line,
    output_text,
    session_table,
    sessions_table,
    stderr_console,
)
from openbrowse.cli.sanitize import terminal_safe, terminal_safe_json


def _load_schema(path: Path) -> dict[str, Any]:
    try:
        schema = json.loads(path.read_text("utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise click.BadParameter(f"cannot read {path}: {exc}", param_hint="--schema") from exc
    except json.JSONDecodeError as exc:
        raise click.BadParameter(f"{path} is not JSON: {exc}", param_hint="--schema") from exc
    if not isinstance(schema, dict):
        raise click.BadParameter(f"{path} must hold a JSON object (a JSON Schema)", param_hint="--schema")
    return schema


def _watch(client: ApiClient, session_id: str, *, as_json: bool, after: str | None = None) -> int:
    """Stream the feed to stderr under a live progress line, print the output to stdout; return the exit code."""
    console = stderr_console()
    progress = ProgressLine()
    with Live(progress, console=console, transient=True, refresh_per_second=8, redirect_stdout=False) as live:

        def on_event(name: str, data: Any) -> None:
            if name == "message":
                live.console.print(message_line(data))
            elif name == "status":
                progress.update_status(data)
            elif name == "activity":
                progress.update_activity(data)
            elif name == "code" and data.get("status") == "Running":
                name = terminal_safe(str(data.get("name")))
                live.console.print(f"  ◦ code: running {name}", style="blue", markup=False)

        session = follow(client, session_id, on_event, after=after)
    console.print(outcome_line(session))
    text = output_text(session.get("output"), as_json=as_json or session.get("outputSchema") is not None)
    if text is not None:
        click.echo(text)
    return 0 if session.get("isTaskSuccessful") is True else 1


@click.command()
@click.argument("task")
@click.option("--model", help="Model name, e.g. claude-sonnet-5 or gpt-5.6-terra (default: the server's).")
@click.option("--reasoning-effort", help="default, none, low, medium, high, xhigh or max.")
@click.option(
    "--schema",
    "schema_file",
    type=click.Path(dir_okay=False, path_type=Path),
    help="JSON Schema file for a structured answer; the output is printed as JSON.",
)
@click.option("--keep-alive", is_flag=True, help="Keep the browser after the task, for follow-ups.")
@click.option("--profile", help="Profile id whose cookies and storage the browser starts with.")
@click.option("--max-cost", type=click.FloatRange(min=0, min_open=True), help="Budget in USD for this task.")
@click.option("--session", "session_id", help="Send TASK as a follow-up to this existing session.")
@click.option(
    "--follow/--no-follow",
    default=True,
    show_default=True,
    help="Stream the run until it ends; --no-follow prints the session id and returns at once.",
)
@connection_options
def run(
    task: str,
    model: str | None,
    reasoning_effort: str | None,
    schema_file: Path | None,
    keep_alive: bool,
    profile: str | None,
    max_cost: float | None,
    session_id: str | None,
    follow: bool,
    url: str,
    api_key: str | None,
) -> None:
    """Run TASK in a real browser, stream its progress and print the answer."""
    body: dict[str, Any] = {"task": task}
    if schema_file is not None:
        body["outputSchema"] = _load_schema(schema_file)
    options = {
        "model": model,
        "reasoningEffort": reasoning_effort,
        "profileId": profile,
        "maxCostUsd": max_cost,
        "sessionId": session_id,
    }
    body.update({key: value for key, value in options.items() if value is not None})
    if keep_alive:
        body["keepAlive"] = True
    with ApiClient(url, api_key) as client:
        # a follow-up shows only its own turn: the feed is streamed from the last message before it
        after = client.last_message_id(session_id) if session_id and follow else None
        created = client.create_session(body)
        if not follow:
            click.echo(terminal_safe(created["id"]))
            return
        stderr_console().print(f"Session {terminal_safe(created['id'])}", style="dim", markup=False)
        code = _watch(client, created["id"], as_json=schema_file is not None, after=after)
    click.get_current_context().exit(code)


@click.group()
def sessions() -> None:
    """List, inspect, follow, stop and delete sessions."""


@sessions.command("ls")
@click.option("--page", type=click.IntRange(min=1), default=1, show_default=True)
@click.option("--page-size", type=click.IntRange(1, 100), default=20, show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Print the API's JSON instead of a table.")
@connection_options
def list_sessions(page: int, page_size: int, as_json: bool, url: str, api_key: str | None) -> None:
    """Sessions, newest first."""
    with ApiClient(url, api_key) as client:
        listing = client.sessions(page, page_size)
    if as_json:
        click.echo(json.dumps(listing, indent=2))
        return
    Console().print(sessions_table(listing["sessions"], listing["total"], page))


@sessions.command("show")
@click.argument("session_id")
@click.option("--json", "as_json", is_flag=True, help="Print the API's JSON.")
@connection_options
def show_session(session_id: str, as_json: bool, url: str, api_key: str | None) -> None:
    """One session: status, costs, and its output."""
    with ApiClient(url, api_key) as client:
        session = client.session(session_id)
    if as_json:
        click.echo(terminal_safe_json(session))
        return
    Console().print(session_table(session))
    text = output_text(session.get("output"), as_json=session.get("outputSchema") is not None)
    if text is not None:
        click.echo("output:")
        click.echo(text)


@sessions.command("follow")
@click.argument("session_id")
@connection_options
def follow_session(session_id: str, url: str, api_key: str | None) -> None:
    """Attach to a session: replay its feed, stream it until it rests, print its output."""
    with ApiClient(url, api_key) as client:
        code = _watch(client, session_id, as_json=False)
    click.get_current_context().exit(code)


@sessions.command("stop")
@click.argument("session_id")
@click.option("--task", "task_only", is_flag=True, help="Stop only the current task; the session becomes idle.")
@connection_options
def stop_session(session_id: str, task_only: bool, url: str, api_key: str | None) -> None:
    """Stop a session's run (and close its browser)."""
    with ApiClient(url, api_key) as client:
        session = client.stop(session_id, "task" if task_only else "session")
    click.echo(terminal_safe(f"{session['id']} {session['status']}"))


@sessions.command("rm")
@click.argument("session_ids", nargs=-1, required=True)
@connection_options
def remove_sessions(session_ids: tuple[str, ...], url: str, api_key: str | None) -> None:
    """Delete sessions with their feed and files."""
    with ApiClient(url, api_key) as client:
        for session_id in session_ids:
            client.delete(session_id)
            click.echo(f"{session_id} deleted")


@click.group()
def browsers() -> None:
    """Raw browsers (``/v3/browsers``) for your own CDP clients."""


@browsers.command("ls")
@click.option("--json", "as_json", is_flag=True, help="Print the API's JSON instead of a table.")
@connection_options
def list_browsers(as_json: bool, url: str, api_key: str | None) -> None:
    """Raw browsers, newest first."""
    with ApiClient(url, api_key) as client:
        listing = client.browsers()
    if as_json:
        click.echo(json.dumps(listing, indent=2))
        return
    Console().print(browsers_table(listing["items"], listing["totalItems"]))


__all__ = ["CliError", "browser", "browsers", "run", "sessions"]
