"""Command line: ``openbrowse [serve] [--host H] [--port P]`` starts the server (the default command);
``openbrowse run``, ``openbrowse sessions …`` and ``openbrowse browsers ls`` are the HTTP client
(``openbrowse.cli``)."""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable
from typing import Any

import click

from openbrowse import __version__
from openbrowse.cli import browser, browsers, run, sessions
from openbrowse.errors import ConfigError, StoreUnavailable

logger = logging.getLogger("openbrowse")


def _serve(host: str | None, port: int | None) -> int:
    from openbrowse.bootstrap import prepare_process_environment
    from openbrowse.config import Settings
    from openbrowse.logs import configure_logging

    overrides: dict[str, object] = {}
    if host:
        overrides["HOST"] = host
    if port is not None:
        overrides["PORT"] = port
    try:
        settings = Settings.load(**overrides)
    except ConfigError as exc:
        sys.stderr.write(f"openbrowse: {exc.message}\n")
        return 2
    configure_logging(settings.LOG_LEVEL, settings.LOG_FORMAT)
    prepare_process_environment(settings.data_dir)
    from openbrowse.server import serve

    try:
        serve(settings)
    except (ConfigError, StoreUnavailable) as exc:
        logger.error("%s", exc.message)
        return 2
    return 0


def _serve_options(command: Callable[..., Any]) -> Callable[..., Any]:
    command = click.option("--port", type=int, help="listen port (default: PORT, else 8420; 0 = ephemeral)")(command)
    return click.option("--host", help="bind address (default: HOST, else 127.0.0.1)")(command)


@click.group(invoke_without_command=True, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="openbrowse", message="%(prog)s %(version)s")
@_serve_options
@click.pass_context
def cli(ctx: click.Context, host: str | None, port: int | None) -> None:
    """Self-hosted browser-agent service. Without a command: serve."""
    if ctx.invoked_subcommand is None:
        ctx.exit(_serve(host, port))


@cli.command()
@_serve_options
def serve(host: str | None, port: int | None) -> None:
    """Start the API server (the default command)."""
    click.get_current_context().exit(_serve(host, port))


@cli.group()
def db() -> None:
    """The store: copy it from one backend to another."""


@db.command("copy")
@click.option(
    "--from", "source", required=True, help="the store to read, e.g. sqlite:////srv/openbrowse/data/browser_use.db"
)
@click.option("--to", "target", required=True, help="an empty store to fill, e.g. postgresql://user:pass@host/db")
def db_copy(source: str, target: str) -> None:
    """Copy sessions, feeds, raw browsers, profiles (with their jars) and the webhook outbox into an empty store.
    Stop the server that uses the source first."""
    click.get_current_context().exit(_copy(source, target))


def _copy(source: str, target: str) -> int:
    import asyncio

    from openbrowse.store.copy import copy_store
    from openbrowse.store.target import StoreTarget

    try:
        copied = asyncio.run(copy_store(StoreTarget.parse(source), StoreTarget.parse(target)))
    except (ConfigError, StoreUnavailable) as exc:
        sys.stderr.write(f"openbrowse: {exc.message}\n")
        return 2
    click.echo(", ".join(f"{count} {name}" for name, count in copied.items()) + " copied.")
    return 0


cli.add_command(run)
cli.add_command(sessions)
cli.add_command(browsers)
cli.add_command(browser)


def main(argv: list[str] | None = None) -> int:
    try:
        cli.main(args=argv, prog_name="openbrowse")
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 2)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
