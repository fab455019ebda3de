"""The command line client: ``openbrowse run``, ``openbrowse sessions …``, ``openbrowse browsers ls``.

It talks HTTP to a local or remote server, like any other client, and never imports the server's internals.
"""

from __future__ import annotations

from openbrowse.cli.commands import browsers, run, sessions

__all__ = ["browsers", "run", "sessions"]
