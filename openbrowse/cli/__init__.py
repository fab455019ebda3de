"""The command line client: ``openbrowse run``, ``sessions …``, ``browsers ls``, ``browser <id> …``.

It talks HTTP to a local or remote server, like any other client, and never imports the server's internals.
"""

from __future__ import annotations

from openbrowse.cli.commands import browser, browsers, run, sessions

__all__ = ["browser", "browsers", "run", "sessions"]
