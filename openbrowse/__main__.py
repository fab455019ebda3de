"""Command line: ``python -m openbrowse [serve] [--host H] [--port P]`` or ``openbrowse serve``."""

from __future__ import annotations

import argparse
import logging
import sys

from openbrowse import __version__
from openbrowse.errors import ConfigError

logger = logging.getLogger("openbrowse")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="openbrowse", description="Self-hosted browser-agent service.")
    parser.add_argument("--version", action="version", version=f"openbrowse {__version__}")
    commands = parser.add_subparsers(dest="command")
    serve = commands.add_parser("serve", help="start the API server (the default command)")
    for target in (parser, serve):
        target.add_argument("--host", help="bind address (default: HOST, else 127.0.0.1)")
        target.add_argument("--port", type=int, help="listen port (default: PORT, else 8420; 0 = ephemeral)")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    from openbrowse.bootstrap import prepare_process_environment
    from openbrowse.config import Settings
    from openbrowse.logs import configure_logging

    overrides: dict[str, object] = {}
    if args.host:
        overrides["HOST"] = args.host
    if args.port is not None:
        overrides["PORT"] = args.port
    try:
        settings = Settings.load(**overrides)
    except ConfigError as exc:
        sys.stderr.write(f"openbrowse: {exc.message}\n")
        return 2
    configure_logging(settings.LOG_LEVEL)
    prepare_process_environment(settings.data_dir)
    from openbrowse.server import serve

    try:
        serve(settings)
    except ConfigError as exc:
        logger.error("%s", exc.message)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
