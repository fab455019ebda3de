"""Child for the metadata test: runs in a network namespace of the test's own (``unshare --net``).

It gives that namespace a link-local "cloud metadata" address (169.254.169.254 on ``lo``), serves a secret there,
starts a real slot, and has the slot's browser try to read it: by navigation, by a page ``fetch``, and from a
process inside the sandbox. Prints one JSON line: what the direct request (the control), each attempt and the
metadata server saw.

Usage: ``metadata_probe.py <data dir> <slot index>``.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.request import urlopen

from playwright.async_api import async_playwright

from openbrowse.config import Settings
from openbrowse.slots.process import ManagedProcess
from openbrowse.slots.slot import Slot

METADATA = "169.254.169.254"
SECRET = "AKIA-metadata-canary-51c7"
hits: list[str] = []


class Metadata(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        hits.append(self.path)
        body = f'{{"AccessKeyId": "{SECRET}"}}'.encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


async def main() -> None:
    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
    subprocess.run(["ip", "addr", "add", f"{METADATA}/32", "dev", "lo"], check=True)
    server = ThreadingHTTPServer((METADATA, 80), Metadata)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    control = urlopen(f"http://{METADATA}/latest/meta-data/", timeout=5).read().decode()
    hits.clear()
    report: dict[str, Any] = {"control": SECRET in control}
    settings = Settings(OPENBROWSE_DATA_DIR=Path(sys.argv[1]), MAX_CONCURRENT_SESSIONS=1, NETWORK_POLICY="open")
    async with Slot(settings, int(sys.argv[2])) as slot, async_playwright() as driver:
        browser = await driver.chromium.connect_over_cdp(slot.cdp_url)
        page = browser.contexts[0].pages[0]
        response = await page.goto(f"http://{METADATA}/latest/meta-data/iam/security-credentials/")
        report["navigation"] = {"status": response.status if response else None, "body": await page.content()}
        report["fetch"] = await page.evaluate(
            """async (url) => { try { const r = await fetch(url); return r.status + ' ' + await r.text(); }
               catch (e) { return 'error ' + e; } }""",
            f"http://{METADATA}/latest/meta-data/",
        )
        await browser.close()
        probe = f"import socket; s = socket.socket(); s.settimeout(3); print(s.connect_ex(('{METADATA}', 80)))"
        process = ManagedProcess(
            "probe", slot.confinement.command([sys.executable, "-I", "-c", probe]), env={}, expect_exit=True
        )
        async with process:
            await process.died
        report["raw_socket"] = process.output_tail().strip()
    report["hits"] = list(hits)
    report["secret"] = SECRET
    print(json.dumps(report), flush=True)
    server.shutdown()


asyncio.run(main())
