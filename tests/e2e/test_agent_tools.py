"""The agent's own tools through real runs: http_fetch, the guard layer, tabs, run_code scripts and the network
policy. find_links and read_pages are ``test_reading_tools.py``."""

from __future__ import annotations

import json
import os
from pathlib import Path

import psutil
import pytest

from openbrowse.slots.layout import slot_layout
from tests.conftest import StartServer
from tests.e2e.agent_support import (
    agent_steps,
    create,
    data_of,
    envelope_in,
    messages,
    session_files,
    step_requests,
    stop,
    token,
    wait_for_message,
    wait_until_status,
)
from tests.e2e.servers import api_client, raw_browser
from tests.fakes.llm_request import LLMRequest, find_index
from tests.fakes.llm_script import agent_step, done, navigate
from tests.fakes.llm_server import FakeProvider
from tests.fakes.site import FixtureSites
from tests.support import loopback
from tests.support.server import ServerProcess
from tests.support.waiting import wait_for, wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.display]


def test_http_fetch_delivers_small_bodies_inline_and_big_ones_as_files(
    agent_server: ServerProcess, fake: FakeProvider, site: FixtureSites
) -> None:
    marker = token("FETCH")
    long_js = "(() => 'x'.repeat(12000))()"
    fake.script(
        marker,
        [
            agent_step([{"http_fetch": {"url": f"{site.url}/prices.json"}}]),
            agent_step([{"http_fetch": {"url": f"{site.url}/big"}}]),
            agent_step([{"http_fetch": {"url": "http://169.254.169.254/latest/meta-data/"}}]),
            agent_step([{"evaluate": {"code": long_js}}]),
            agent_step([{"evaluate": {"code": long_js}}]),
            done("fetched"),
        ],
        when=agent_steps,
    )
    session = create(agent_server, task=f"{marker} Read the price list at {site.url}/prices.json")
    sid = session["id"]
    finished = wait_until_status(agent_server, sid, {"stopped", "error"})
    assert finished["status"] == "stopped" and finished["isTaskSuccessful"] is True
    requests = step_requests(fake, marker)
    assert len(requests) == 6
    files = session_files(agent_server, sid)

    small = envelope_in(requests[1], "fetch_127.0.0.1_prices.json.json")
    assert small["data"] == {
        "blue": {"name": "Blue Widget", "price": "42.00"},
        "red": {"name": "Red Gadget", "price": "17.50"},
        "green": {"name": "Green Gizmo", "price": "8.25"},
    }
    assert json.loads((files / "fetch_127.0.0.1_prices.json.json").read_text())["red"]["price"] == "17.50"

    big = envelope_in(requests[2], "fetch_127.0.0.1_big.html")
    saved = (files / "fetch_127.0.0.1_big.html").read_text()
    assert len(saved) > 3_000_000 and "SKU-049999" in saved
    assert big["truncated"] is True and big["totalChars"] == len(saved)
    assert str(big["sample"]).startswith("<!doctype html>") and len(str(big["sample"])) == 300
    assert "SKU-049999" not in requests[2].text

    refused = requests[3].text
    assert "Refused by the network policy: 169.254.169.254 is a link-local address (never allowed)." in refused

    assert (files / "readout_evaluate_1.txt").read_text() == "x" * 12000
    assert "x" * 8001 not in requests[4].text
    assert "saved as readout_evaluate_1.txt" in requests[4].text
    assert "[identical to earlier output #" in requests[5].text and "stop repeating this" in requests[5].text

    rows = [m for m in messages(agent_server, sid) if m["type"] in {"result", "browser_action", "browser_action_error"}]
    fetch_rows = [data_of(m) for m in rows if data_of(m).get("action") == "http_fetch"]
    assert [row["category"] for row in fetch_rows] == ["network"] * 3
    assert "fetch_127.0.0.1_big.html" in fetch_rows[1]["resultSnippet"]


def test_public_only_blocks_loopback_navigation_subresources_and_fetches(
    start_server: StartServer, fake: FakeProvider, site: FixtureSites
) -> None:
    server = start_server(**fake.env(), NETWORK_POLICY="public-only", NETWORK_ALLOWED_HOSTS="localhost")
    site.state.hits.clear()
    marker = token("POLICY")
    allowed = f"http://localhost:{site.port}"
    pixel_page = f"{allowed}/with-pixel?src=http://127.0.0.1:{site.port}/pixel.gif"
    fake.script(
        marker,
        [
            navigate(f"http://127.0.0.1:{site.port}/product/red"),
            navigate(f"{allowed}/product/blue"),
            navigate(pixel_page),
            agent_step([{"http_fetch": {"url": f"http://0x7f.1:{site.port}/prices.json"}}]),
            agent_step([{"http_fetch": {"url": f"{allowed}/prices.json"}}]),
            done("checked"),
        ],
        when=agent_steps,
    )
    session = create(server, task=f"{marker} Look around the shop.")
    finished = wait_until_status(server, session["id"], {"stopped", "error"})
    assert finished["status"] == "stopped"
    requests = step_requests(fake, marker)
    assert len(requests) == 6
    assert "Red Gadget" not in requests[1].text
    assert "Blue Widget" in requests[2].text
    assert "127.0.0.1 is a loopback address (NETWORK_POLICY=public-only)." in requests[4].text
    assert '"Blue Widget"' in requests[5].text or "Blue Widget" in requests[5].text
    hosts = {host for host, _ in site.state.hits}
    assert f"127.0.0.1:{site.port}" not in hosts, site.state.hits
    assert site.state.hosts_of("/product/blue") == [f"localhost:{site.port}"]
    assert site.state.hosts_of("/pixel.gif") == []
    assert site.state.hosts_of("/prices.json") == [f"localhost:{site.port}"]


def tab_list(request: LLMRequest) -> str:
    """The "Available tabs" block of the last browser state the model was shown."""
    start = request.text.rfind("Available tabs:")
    return request.text[start : request.text.find("\n\n", start)]


def test_start_url_is_captured_after_the_first_step_when_the_task_has_none(
    agent_server: ServerProcess, fake: FakeProvider, site: FixtureSites
) -> None:
    marker = token("NOURL")
    fake.script(
        marker,
        [navigate(f"{site.url}/product/red"), agent_step([{"recall": {"key": "startUrl"}}]), done("ok")],
        when=agent_steps,
    )
    session = create(agent_server, task=f"{marker} Find the red gadget in the fixture shop.")
    sid = session["id"]
    wait_until_status(agent_server, sid, {"stopped", "error"})
    memory = [m["summary"] for m in messages(agent_server, sid) if data_of(m).get("category") == "memory"]
    assert memory == [f"startUrl: {site.url}/product/red"]
    assert f"{site.url}/product/red" in step_requests(fake, marker)[2].text


def test_tab_fan_out_keeps_two_loaded_tabs_and_returns_to_the_base(
    agent_server: ServerProcess, fake: FakeProvider, site: FixtureSites
) -> None:
    marker = token("TABS")
    items = [f"{site.url}/catalog/item/{n}" for n in (101, 102, 103)]
    fake.script(
        marker,
        [
            navigate(f"{site.url}/product/green"),
            agent_step([{"open_tabs": {"urls": items}}]),
            agent_step([{"goto_tab": {"n": 1}}]),
            agent_step([{"goto_tab": {"n": 2}}]),
            agent_step([{"goto_tab": {"n": 3}}]),
            agent_step([{"close_tab": {}}]),
            lambda request: agent_step([{"open_in_new_tab": {"index": find_index(request, "Back to shop")}}]),
            agent_step([{"close_tab": {}}]),
            done("toured"),
        ],
        when=agent_steps,
    )
    site.state.hits.clear()
    session = create(agent_server, task=f"{marker} Tour three catalog items in tabs.")
    finished = wait_until_status(agent_server, session["id"], {"stopped", "error"})
    assert finished["status"] == "stopped", finished["lastStepSummary"]
    requests = step_requests(fake, marker)
    assert f"Opened 3 lazy tab(s) — 1: {items[0]}; 2: {items[1]}; 3: {items[2]}" in requests[2].text
    assert "Tab 3 is loaded and focused" in requests[5].text and "Price: 103.99 EUR" in requests[5].text
    tabs_after_third = tab_list(requests[5])
    assert "/catalog/item/103 " in tabs_after_third and "/catalog/item/102 " in tabs_after_third
    assert "/catalog/item/101" in tabs_after_third or "about:blank" in tabs_after_third
    tabs_after_close = tab_list(requests[6])
    assert "/catalog/item/101" not in tabs_after_close, tabs_after_close
    assert "/catalog/item/102 " in tabs_after_close and "/catalog/item/103" not in tabs_after_close
    assert "Closed the tab; focus is back on the base tab." in requests[6].text
    assert "Green Gizmo" in requests[6].text[requests[6].text.rfind("<browser_state>") :]
    assert [site.state.hosts_of(f"/catalog/item/{n}") for n in (101, 102, 103)] == [[f"127.0.0.1:{site.port}"]] * 3
    assert f"Opened {site.url}/ in a new tab and focused it" in requests[7].text
    assert "Welcome to the offline test shop." in requests[7].text[requests[7].text.rfind("<browser_state>") :]
    assert "Green Gizmo" in requests[8].text[requests[8].text.rfind("<browser_state>") :]


COLLECT_SCRIPT = """
frame = await browser.wait_for_frame(PANEL)
jobs = await browser.frame_evaluate(PANEL, "Array.from(document.querySelectorAll('a')).map(a => a.textContent)")
title = await browser.evaluate("document.title")
prices = (await fetch(SHOP + "/prices.json"))["json"]
save_json("jobs.json", {"title": title, "jobs": jobs, "red": prices["red"]["price"]})
count = len(jobs)
print(title, count, frame["crossOrigin"])
"""

ASYNC_RUN_SCRIPT = """
async def main():
    page = await browser.frame_text(PANEL)
    print("panel says", page.split()[0], "and count is still", count)
asyncio.run(main())
try:
    await fetch("http://169.254.169.254/latest/meta-data/")
except PermissionError as refused:
    print("refused:", refused)
with open("../escape.txt", "w") as handle:
    handle.write("no")
"""


def test_run_code_file_scripts_work_inside_cross_origin_frames_and_keep_their_namespace(
    agent_server: ServerProcess, fake: FakeProvider, site: FixtureSites
) -> None:
    marker = token("CODE")
    prelude = f"PANEL = 'localhost:{site.panel_port}'\nSHOP = '{site.url}'\n"
    fake.script(
        marker,
        [
            agent_step(
                [
                    {
                        "run_code_file": {
                            "name": "collect",
                            "code": prelude + COLLECT_SCRIPT,
                            "url": f"{site.url}/jobs?embed=localhost",
                        }
                    }
                ]
            ),
            agent_step([{"run_code_file": {"name": "more", "code": ASYNC_RUN_SCRIPT}}]),
            agent_step([{"run_code_file": {"name": "collect"}}]),
            agent_step([{"run_code_file": {"name": "missing"}}]),
            done("coded"),
        ],
        when=agent_steps,
    )
    session = create(agent_server, task=f"{marker} Collect the jobs with a script.")
    sid = session["id"]
    finished = wait_until_status(agent_server, sid, {"stopped", "error"})
    assert finished["status"] == "stopped", finished["lastStepSummary"]
    requests = step_requests(fake, marker)
    files = session_files(agent_server, sid)

    first = requests[1].text
    assert "Ran scripts/collect.py.\nOutput:\nJobs board 24 True\n\nFiles saved: jobs.json" in first
    saved = json.loads((files / "jobs.json").read_text())
    assert saved["jobs"] == [f"Engineer {n}" for n in range(1, 25)] and saved["red"] == "17.50"
    assert (files / "scripts" / "collect.py").read_text().endswith(COLLECT_SCRIPT)

    second = requests[2].text
    assert "panel says Panel and count is still 24" in second
    assert "refused: Refused by the network policy: 169.254.169.254 is a link-local address (never allowed)." in second
    assert "Error: PermissionError: ../escape.txt is outside the session's file area (line 10:" in second
    assert not (files.parent / "escape.txt").exists()
    assert "Ran scripts/collect.py.\nOutput:\nJobs board 24 True" in requests[3].text
    assert "No saved script missing.py; pass code to create it." in requests[4].text
    feed = messages(agent_server, sid)
    code_events = [m["summary"] for m in feed if m["type"] == "event" and data_of(m)["category"] == "code"]
    assert code_events == [
        "Writing collect.py",
        "Running collect.py",
        "Writing more.py",
        "Running more.py",
        "Running collect.py",
    ]


def script_hosts(server: ServerProcess) -> list[psutil.Process]:
    hosts = []
    for proc in server.children():
        try:
            is_python = proc.name().startswith("python")  # not the nsenter that entered it into the sandbox
            if (
                is_python
                and "openbrowse.scripthost" in " ".join(proc.cmdline())
                and proc.status() != psutil.STATUS_ZOMBIE
            ):
                hosts.append(proc)
        except psutil.NoSuchProcess:
            continue
    return hosts


def test_a_stop_ends_a_spinning_script_at_once_and_its_process_never_saw_a_secret(
    agent_server: ServerProcess, fake: FakeProvider
) -> None:
    """Scripts run in their own process (spec §11.3, §24.1): the server's loop stays free while one spins, and a
    stop kills it."""
    marker = token("SPIN")
    spin = "import os\nprint('keys:', sorted(k for k in os.environ if 'KEY' in k))\nwhile True:\n    pass\n"
    fake.script(
        marker, [agent_step([{"run_code_file": {"name": "spin", "code": spin}}]), done("never")], when=agent_steps
    )
    session = create(agent_server, task=f"{marker} Spin forever.")
    sid = session["id"]
    wait_for_message(agent_server, sid, lambda m: m["summary"] == "Running spin.py", timeout=120)
    [host] = wait_for(lambda: script_hosts(agent_server), 30, what="a script host process")
    assert agent_server.process is not None and host.pid != agent_server.process.pid
    assert host.uids().real not in {0, os.getuid()}, "the script host runs as the slot's own uid (spec §24.2)"
    environ = Path(f"/proc/{host.pid}/environ").read_bytes()
    assert b"_API_KEY" not in environ and b"OPENAI" not in environ and b"ANTHROPIC" not in environ
    assert loopback.get(f"{agent_server.base_url}/health", timeout=5).status_code == 200, "the server's loop is free"
    stop(agent_server, sid)
    finished = wait_until_status(agent_server, sid, {"stopped", "error"}, timeout=60)  # a spinning script ends
    assert finished["status"] == "stopped"
    wait_until(lambda: not script_hosts(agent_server), 30, what="the script host ending with its session")


def test_the_agent_cannot_reach_another_slots_devtools_or_this_service(
    agent_server: ServerProcess, fake: FakeProvider
) -> None:
    """What a hostile page would ask the agent to do (spec §19.2, §24.4): open another slot's DevTools list, or this
    service's own API. Both are refused at the sandbox's boundary and the feed says so."""
    # another live slot, whose DevTools a page would love to drive
    with api_client(agent_server, timeout=30) as http, raw_browser(http):
        ports = [slot_layout(agent_server.slot_base + i).cdp_port for i in range(3)]
        marker = token("DEVTOOLS")
        steps = [navigate(f"http://127.0.0.1:{port}/json/list") for port in ports]
        steps.append(navigate(f"http://127.0.0.1:{agent_server.port}/v3/sessions"))
        fake.script(marker, [*steps, done("looked")], when=agent_steps)
        session = create(agent_server, task=f"{marker} Look at the debugging endpoints.")
        finished = wait_until_status(agent_server, session["id"], {"stopped", "error"}, timeout=180)
    assert finished["status"] == "stopped", finished["lastStepSummary"]
    requests = step_requests(fake, marker)
    assert len(requests) == len(steps) + 1
    for request in requests[1:]:
        assert "webSocketDebuggerUrl" not in request.text
        assert "devtools/page" not in request.text
    assert "Blocked by OpenBrowse network policy" in requests[-1].text
    refusals = [data_of(m) for m in messages(agent_server, session["id"]) if data_of(m).get("category") == "network"]
    assert {r.get("rule") for r in refusals} >= {"slot_endpoint", "service_port"}
