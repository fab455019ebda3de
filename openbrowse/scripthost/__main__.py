"""``python -I -m openbrowse.scripthost --channel-fd N --cdp-fd M``: serve runs until the server hangs up.

The seccomp filter (:mod:`.seccomp`) is installed before anything else runs, so no script ever runs without it."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import sys
from typing import Any

from openbrowse.scripthost.browser import ScriptBrowser
from openbrowse.scripthost.capture import Capture, Flusher
from openbrowse.scripthost.cdp import Cdp
from openbrowse.scripthost.channel import Channel
from openbrowse.scripthost.helpers import FileHelpers, served_helpers, store_helpers
from openbrowse.scripthost.namespace import Namespace, pick_jsonld
from openbrowse.scripthost.seccomp import install_filter
from openbrowse.scripthost.wire import OUTPUT_LIMIT, TOKEN_ENV

ERROR_LIMIT = 4000


class Host:
    def __init__(self, channel: Channel, cdp_fd: int) -> None:
        self._channel = channel
        self._run_id = 0
        self._target: str | None = None
        served = served_helpers(channel)
        browser = ScriptBrowser(Cdp(cdp_fd), lambda: self._target, served["read_pages"])
        self._namespace = Namespace(
            {
                "browser": browser,
                **FileHelpers(channel).namespace(),
                **served,
                "pick_jsonld": pick_jsonld,
                "json": json,
                "re": re,
            }
        )
        self._store = store_helpers(channel)
        self._flusher = Flusher(self._send_output)

    def _send_output(self, text: str) -> None:
        self._channel.send({"type": "output", "id": self._run_id, "text": text})

    async def run(self, message: dict[str, Any]) -> None:
        run_id, source, filename = message.get("id"), message.get("source"), message.get("filename")
        limit, target = message.get("limit"), message.get("targetId")
        if not (isinstance(run_id, int) and isinstance(source, str) and isinstance(filename, str)):
            return  # the server only sends well-formed runs; anything else is not one
        self._run_id = run_id
        self._target = target if isinstance(target, str) else None
        for name, function in self._store.items():
            self._namespace.bind(name, function, present=bool(message.get("store")))
        capture = Capture()
        self._flusher.watch(capture)
        saved = sys.stdout, sys.stderr
        sys.stdout = sys.stderr = capture
        try:
            ran = await self._namespace.run(source, filename, float(limit) if isinstance(limit, int | float) else 300.0)
        finally:
            sys.stdout, sys.stderr = saved
            self._flusher.watch(None)
        self._channel.send(
            {
                "type": "done",
                "id": run_id,
                "stdout": capture.take(OUTPUT_LIMIT),
                "stdoutChars": capture.total,
                "error": ran.error[:ERROR_LIMIT] if ran.error else None,
                "timedOut": ran.timed_out,
            }
        )


async def serve(channel_fd: int, cdp_fd: int, token: str) -> None:
    channel = Channel(channel_fd, token)
    host = Host(channel, cdp_fd)
    while True:
        await host.run(await channel.runs.get())


def main() -> None:
    parser = argparse.ArgumentParser(prog="openbrowse.scripthost")
    parser.add_argument("--channel-fd", type=int, required=True, help="the inherited channel socket")
    parser.add_argument("--cdp-fd", type=int, required=True, help="the inherited socket to the page filter")
    args = parser.parse_args()
    install_filter()
    token = os.environ.pop(TOKEN_ENV, "")
    asyncio.run(serve(args.channel_fd, args.cdp_fd, token))


if __name__ == "__main__":
    main()
