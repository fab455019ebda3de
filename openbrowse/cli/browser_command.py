"""What every ``openbrowse browser <id> <subcommand>`` shares: the target, the connection, ``--json``, the exit code.

A subcommand is a function that makes its calls on a :class:`ControlClient` and returns a :class:`Shown`: the raw
JSON body (printed as it is with ``--json``) and what to print otherwise. :func:`control_command` adds the common
options and turns it into a Click command; ``browser.py`` gathers them under the ``browser`` group.

Exit codes as the rest of the CLI: 0 done, 1 the server answered but the action did not happen (a dialog blocked
it, a batch entry failed), 2 usage error, a refusal, or a server that cannot be reached.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import click
from rich.console import Console, RenderableType

from openbrowse.cli.browser_client import ControlClient, ControlRefused, TargetKind
from openbrowse.cli.client import ApiClient
from openbrowse.cli.sanitize import terminal_safe, terminal_safe_json

__all__ = ["Shown", "TargetOptions", "control_command", "control_group", "json_argument", "target_id_option"]


@dataclass
class Shown:
    """A subcommand's result: the body for ``--json``, the readable form, and the exit code."""

    body: Any
    text: RenderableType | None = None
    exit_code: int = 0
    note: str | None = None
    """A line for stderr (why the exit code is 1, a truncation) shown in both modes."""


@dataclass
class TargetOptions:
    """The group's options: ``openbrowse browser [--session|--browser] [--url] [--api-key] [--json] ID …``.

    They come before ID: a Click group takes no options between its arguments and the subcommand.
    """

    target_id: str
    kind: TargetKind | None
    url: str
    api_key: str | None
    as_json: bool


Handler = Callable[..., Shown]


def _print(shown: Shown, *, as_json: bool) -> None:
    if as_json:
        click.echo(terminal_safe_json(shown.body))
    elif isinstance(shown.text, str):
        click.echo(shown.text)
    elif shown.text is not None:
        Console(highlight=False).print(shown.text)
    if shown.note:
        click.echo(terminal_safe(shown.note), err=True)


def _with_control(handler: Handler, name: str) -> Callable[..., None]:
    """The Click callback around ``handler``: its options plus ``--json``.

    ``--url`` and ``--api-key`` belong to the group (``openbrowse browser --url … ID status``) only: ``wait`` has a
    ``--url`` of its own, the URL glob the seed gives it.
    """

    @click.pass_context
    def callback(ctx: click.Context, /, as_json: bool, **params: Any) -> None:
        if ctx.invoked_subcommand is not None:  # a group's own handler runs only when called alone
            return
        target = ctx.find_object(TargetOptions)
        if target is None:  # invoked outside the group, e.g. by a test calling the command itself
            raise click.UsageError("run it as: openbrowse browser <id> " + name)
        as_json = as_json or target.as_json
        api = ApiClient(target.url, target.api_key)
        with ControlClient(api, target.target_id, target.kind) as control:
            try:
                shown = handler(control, **params)
            except ControlRefused as refused:
                if as_json and refused.body is not None:
                    click.echo(terminal_safe_json(refused.body))
                raise
        _print(shown, as_json=as_json)
        ctx.exit(shown.exit_code)

    callback.__click_params__ = list(getattr(handler, "__click_params__", []))  # type: ignore[attr-defined]
    return click.option("--json", "as_json", is_flag=True, help="Print the API's JSON body.")(callback)


def control_command(name: str, *, context_settings: dict[str, Any] | None = None) -> Callable[[Handler], click.Command]:
    """A subcommand with ``--json`` (also accepted on the group: ``openbrowse browser --json ID …``)."""

    def decorate(handler: Handler) -> click.Command:
        callback = _with_control(handler, name)
        return click.command(name, help=handler.__doc__, context_settings=context_settings)(callback)

    return decorate


def control_group(name: str) -> Callable[[Handler], click.Group]:
    """As :func:`control_command`, for a command with subcommands: ``cookies`` lists, ``cookies set`` adds."""

    def decorate(handler: Handler) -> click.Group:
        callback = _with_control(handler, name)
        return click.group(name, help=handler.__doc__, invoke_without_command=True)(callback)

    return decorate


def target_id_option(command: Callable[..., Any]) -> Callable[..., Any]:
    """``--target-id``: the tab (targetId, ``t1`` handle or label) to act on; default the active tab."""
    return click.option("--target-id", help="Tab to use: targetId, tab handle (t1) or label; default the active one.")(
        command
    )


def json_argument(text: str, option: str, *, kind: type[list[Any]] | type[dict[str, Any]] | None = None) -> Any:
    """``text`` parsed as JSON for ``option``, checked to be a ``kind`` (list or dict) when one is given."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise click.BadParameter(f"not JSON: {exc}", param_hint=option) from exc
    if kind is not None and not isinstance(value, kind):
        raise click.BadParameter(f"must be a JSON {'array' if kind is list else 'object'}", param_hint=option)
    return value
