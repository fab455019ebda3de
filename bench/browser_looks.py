"""How the browser looks to sites (spec §28.2): BotD and the probe page in four browsers, as one table.

    .venv/bin/python bench/browser_looks.py [--markdown]

The fixture page of ``tests/fakes/looks_site.py`` (``@fingerprintjs/botd`` from npm, test-only, installed the way
the tests install it, plus the probe ``tests/fakes/looks_probe.js``) is opened in:

* **agent session**: a real server (``python -m openbrowse serve``) and its fake provider; the agent's first step
  navigates to the page (browser-use over CDP, as every session runs);
* **raw browser**: ``POST /v3/browsers`` on the same server, Playwright ``connect_over_cdp`` on its ``cdpUrl``;
* **stock, headful**: ``/usr/bin/chromium`` launched by plain Playwright on an Xvfb display of its own, with the
  flags our slots give it for their looks (``openbrowse.slots.browser_looks``);
* **stock, headless**: the same launch with ``headless=True`` (Playwright's default), for contrast;
* **stock, headful, no flags of ours**: plain Playwright's headful launch with none of those flags.

One run of each (a detector's verdict does not vary between runs; nothing here is timed).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from playwright.async_api import async_playwright

from bench.served import served
from openbrowse.slots.browser_looks import BrowserLooks, host_time_zone
from tests.fakes.llm_script import Gate, done, navigate, structured
from tests.fakes.looks_site import BOTD_PACKAGE_DIR, BOTD_SCRIPT, LooksSite
from tests.support.npm_clients import NpmClients

STOCK_CHROMIUM = "/usr/bin/chromium"
ROWS: tuple[tuple[str, str], ...] = (
    ("BotD verdict", "botd"),
    ("BotD detectors that fired", "botdDetections"),
    ("navigator.webdriver", "webdriver"),
    ("user agent says Headless", "headlessUserAgent"),
    ("userAgentData brands", "brands"),
    ("plugins / mimeTypes", "pluginCounts"),
    ("window.chrome", "chrome"),
    ("Notification.permission / permissions.query", "permissions"),
    ("navigator.languages", "languages"),
    ("Accept-Language", "acceptLanguage"),
    ("time zone", "timeZone"),
    ("Intl locale", "intlLocale"),
    ("WebGL / WebGL2", "webglSupport"),
    ("WebGL renderer", "webglRenderer"),
    ("outer window", "outer"),
    ("CDP leak: Error.stack getter", "cdpStackGetter"),
    ("CDP leak: Error.prepareStackTrace", "cdpPrepareStackTrace"),
    ("automation globals", "automationGlobals"),
)


def derived(seen: dict[str, Any]) -> dict[str, Any]:
    """The report with the combined cells the table shows."""
    return {
        **seen,
        "headlessUserAgent": "Headless" in seen["userAgent"],
        "pluginCounts": f"{len(seen['plugins'])} / {len(seen['mimeTypes'])}",
        "permissions": f"{seen['notification']} / {seen['notificationQuery']}",
        "webglSupport": f"{seen['webgl']} / {seen['webgl2']}",
        "webglRenderer": seen.get("webglRenderer", "none"),
    }


def agent_session(looks: LooksSite) -> dict[str, Any]:
    with served({"MAX_CONCURRENT_SESSIONS": "2", "PREWARM_SLOTS": "0"}) as (server, fake):
        run = f"agent-{uuid.uuid4().hex[:8]}"
        gate = Gate()
        fake.script(
            run,
            [navigate(looks.url_for(run)), structured(done("Looked."), gate=gate)],
            when=lambda request: request.is_agent_step,
        )
        with httpx.Client(timeout=60) as http:
            http.post(f"{server.v3}/sessions", json={"task": f"{run} Open the page."}).raise_for_status()
            seen = looks.report(run)
            gate.open()
            raw = raw_browser(server.base_url, looks)
    return {"agent session": seen, "raw browser": raw}


def raw_browser(base_url: str, looks: LooksSite) -> dict[str, Any]:
    run = f"raw-{uuid.uuid4().hex[:8]}"

    async def drive() -> None:
        async with httpx.AsyncClient(base_url=base_url, timeout=120) as http:
            created = (await http.post("/v3/browsers", json={})).raise_for_status().json()
            try:
                async with async_playwright() as playwright:
                    remote = await playwright.chromium.connect_over_cdp(created["cdpUrl"])
                    await remote.contexts[0].pages[0].goto(looks.url_for(run))
                    await asyncio.to_thread(looks.report, run)
                    await remote.close()
            finally:
                await http.patch(f"/v3/browsers/{created['id']}", json={"action": "stop"})

    asyncio.run(drive())
    return looks.report(run)


def stock(looks: LooksSite, display: str, *, headless: bool, ours: bool = True) -> dict[str, Any]:
    """Plain Playwright's launch of Debian's Chromium with our looks flags (``ours``), or with none (as root:
    ``--no-sandbox``)."""
    browser_looks = BrowserLooks("en-US", host_time_zone())
    run = f"stock-{'headless' if headless else 'headful'}-{uuid.uuid4().hex[:8]}"

    async def drive() -> None:
        async with async_playwright() as playwright:
            browser = await playwright.chromium.launch(
                executable_path=STOCK_CHROMIUM,
                headless=headless,
                args=[
                    *(["--no-sandbox", "--test-type"] if os.geteuid() == 0 else []),
                    *(browser_looks.flags() if ours else []),
                ],
                env={**os.environ, "DISPLAY": display, **(browser_looks.environment() if ours else {})},
            )
            page = await browser.new_page()
            await page.goto(looks.url_for(run))
            await asyncio.to_thread(looks.report, run)
            await browser.close()

    asyncio.run(drive())
    return looks.report(run)


def cell(value: Any) -> str:
    if isinstance(value, dict) and "bot" in value:
        return "**bot: " + (str(value.get("botKind")) if value["bot"] else "no") + "**"
    if isinstance(value, list):
        return ", ".join(str(item) for item in value) or "none"
    return str(value).replace("|", "\\|")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--markdown", action="store_true")
    parser.add_argument("--iterations", type=int, default=1, help="accepted for make bench; one run is enough")
    parser.parse_args()
    install = NpmClients("botd", BOTD_PACKAGE_DIR, (BOTD_SCRIPT,)).ensure()
    # -displayfd: Xvfb picks a free display and writes its number once it accepts clients
    xvfb = subprocess.Popen(
        ["Xvfb", "-displayfd", "1", "-screen", "0", "1920x1080x24", "-nolisten", "tcp"], stdout=subprocess.PIPE
    )
    try:
        assert xvfb.stdout is not None
        display = f":{xvfb.stdout.readline().decode().strip()}"
        with LooksSite(install) as looks:
            results = agent_session(looks)
            results["stock, headful"] = stock(looks, display, headless=False)
            results["stock, headless"] = stock(looks, display, headless=True)
            results["stock, headful, no flags of ours"] = stock(looks, display, headless=False, ours=False)
    finally:
        xvfb.terminate()
        xvfb.wait()
    columns = list(results)
    table = {name: derived(seen) for name, seen in results.items()}
    print("| what a page reads | " + " | ".join(columns) + " |")
    print("|---|" + "---|" * len(columns))
    for label, key in ROWS:
        print(f"| {label} | " + " | ".join(cell(table[name].get(key)) for name in columns) + " |")
    print(f"\nChromium: {table[columns[0]]['userAgent']}; load average {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
