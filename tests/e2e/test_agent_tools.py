"""The agent's own tools through real runs: http_fetch, the guard layer and the network policy."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import httpx
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
from tests.e2e.browser_support import create_browser, stop_browser
from tests.fakes.llm_request import LLMRequest, find_index
from tests.fakes.llm_script import agent_step, done, navigate
from tests.fakes.llm_server import FakeProvider
from tests.fakes.site import FixtureSites
from tests.support.server import ServerProcess

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


def read_events(server: ServerProcess, session_id: str) -> list[str]:
    return [
        m["summary"] for m in messages(server, session_id) if m["type"] == "event" and data_of(m)["category"] == "read"
    ]


def test_find_links_reads_a_cross_origin_panel_and_a_lazy_list_and_read_pages_reads_them(
    agent_server: ServerProcess, fake: FakeProvider, site: FixtureSites
) -> None:
    marker = token("LINKS")
    panel_host = f"127.0.0.1:{site.panel_port}"
    fake.script(
        marker,
        [
            navigate(f"{site.url}/jobs"),
            agent_step([{"find_links": {"frame_url_contains": panel_host}}]),
            agent_step([{"read_pages": {}}]),
            navigate(f"{site.url}/lazy"),
            agent_step([{"find_links": {"href_contains": "/lazy/item/"}}]),
            done("listed"),
        ],
        when=agent_steps,
    )
    session = create(agent_server, task=f"{marker} List the jobs at {site.url}/jobs")
    sid = session["id"]
    finished = wait_until_status(agent_server, sid, {"stopped", "error"}, timeout=400)
    assert finished["status"] == "stopped", finished["lastStepSummary"]
    requests = step_requests(fake, marker)
    files = session_files(agent_server, sid)

    panel = envelope_in(requests[2], "found_links.json")
    assert "24 link(s) found inside frame" in str(panel["note"])
    jobs = [f"http://{panel_host}/job/{n}" for n in range(1, 25)]
    assert "read_pages() with no arguments" in str(panel["note"])

    pages = envelope_in(requests[3], "pages.json")
    assert str(pages["note"]).startswith("Read 24 of 24 page(s)") and "The queue is drained" in str(pages["note"])
    read = json.loads((files / "pages.json").read_text())
    assert sorted(p["url"] for p in read) == sorted(jobs)
    assert all(p["title"].startswith("Engineer ") and "builds things" in p["text"] for p in read)
    statuses = json.loads((files / "read_pages_status.json").read_text())
    assert len(statuses) == 24 and all(s["ok"] for s in statuses)

    lazy = json.loads((files / "found_links.json").read_text())
    assert [link["href"] for link in lazy] == [f"{site.url}/lazy/item/{n}" for n in range(1, 61)]
    assert "60 link(s) found" in requests[5].text

    events = read_events(agent_server, sid)
    assert events[0].startswith("find_links: 24 link(s) matched") and "inside frame" in events[0]
    # a solo run reads waves of 8 tabs
    assert [e.split(":")[0] for e in events[1:5]] == [f"read_pages wave {k}/3" for k in range(1, 4)] + ["find_links"]


def test_read_pages_reads_a_catalog_in_waves_and_resumes_its_queue(
    agent_server: ServerProcess, fake: FakeProvider, site: FixtureSites
) -> None:
    marker = token("CATALOG")
    fake.script(
        marker,
        [
            navigate(f"{site.url}/catalog?n=54"),
            agent_step([{"find_links": {"href_contains": "/catalog/item/"}}]),
            agent_step([{"read_pages": {}}]),
            agent_step([{"read_pages": {}}]),
            agent_step([{"read_pages": {}}]),
            done("read the catalog"),
        ],
        when=agent_steps,
    )
    session = create(agent_server, task=f"{marker} Read every item of {site.url}/catalog?n=54")
    sid = session["id"]
    finished = wait_until_status(agent_server, sid, {"stopped", "error"}, timeout=600)
    assert finished["status"] == "stopped", finished["lastStepSummary"]
    requests = step_requests(fake, marker)
    first = envelope_in(requests[3], "pages.json")
    assert str(first["note"]).startswith("Read 48 of 48 page(s)")
    assert "6 URL(s) remain queued: call read_pages() with no arguments to continue." in str(first["note"])
    second = envelope_in(requests[4], "pages.json")
    assert str(second["note"]).startswith("Read 6 of 6 page(s)") and "The queue is drained" in str(second["note"])
    assert "Nothing left to read: the queue is drained." in requests[5].text

    pages = json.loads((session_files(agent_server, sid) / "pages.json").read_text())
    assert len(pages) == 54
    by_url = {p["url"]: p for p in pages}
    item = by_url[f"{site.url}/catalog/item/17"]
    assert item["jsonld"][0]["offers"]["price"] == "17.99" and item["title"] == "Catalog item 17"
    waves = [e for e in read_events(agent_server, sid) if e.startswith("read_pages wave")]
    assert [w.split(":")[0] for w in waves] == [f"read_pages wave {k}/6" for k in range(1, 7)] + ["read_pages wave 1/1"]


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
    deadline = time.monotonic() + 30
    while not script_hosts(agent_server):
        assert time.monotonic() < deadline, "no script host process"
        time.sleep(0.05)
    [host] = script_hosts(agent_server)
    assert agent_server.process is not None and host.pid != agent_server.process.pid
    assert host.uids().real not in {0, os.getuid()}, "the script host runs as the slot's own uid (spec §24.2)"
    environ = Path(f"/proc/{host.pid}/environ").read_bytes()
    assert b"_API_KEY" not in environ and b"OPENAI" not in environ and b"ANTHROPIC" not in environ
    assert httpx.get(f"{agent_server.base_url}/health", timeout=5).status_code == 200, "the server's loop is free"
    started = time.monotonic()
    stop(agent_server, sid)
    finished = wait_until_status(agent_server, sid, {"stopped", "error"}, timeout=15)
    assert time.monotonic() - started < 10, "a stop ends a spinning script within 10 s (spec §24.5)"
    assert finished["status"] == "stopped"
    host_gone = time.monotonic() + 5
    while script_hosts(agent_server):
        assert time.monotonic() < host_gone, "the script host outlived its session"
        time.sleep(0.05)


def test_read_pages_detects_shell_reads_and_rereads_them_inside_the_panel(
    agent_server: ServerProcess, fake: FakeProvider, site: FixtureSites
) -> None:
    marker = token("SHELL")
    urls = [f"{site.url}/shell/{n}" for n in (1, 2, 3)]
    fake.script(marker, [agent_step([{"read_pages": {"urls": urls}}]), done("read")], when=agent_steps)
    session = create(agent_server, task=f"{marker} Read the three product viewers.")
    sid = session["id"]
    finished = wait_until_status(agent_server, sid, {"stopped", "error"}, timeout=300)
    assert finished["status"] == "stopped", finished["lastStepSummary"]
    pages = {p["url"]: p for p in json.loads((session_files(agent_server, sid) / "pages.json").read_text())}
    for n, url in enumerate(urls, 1):
        assert pages[url]["frameMatched"] is True
        assert f"Detail {n}: weight {n} kg, made of oak." in pages[url]["text"]
    assert "read_pages: 3 shell read(s) detected, 3 recovered inside their panel" in read_events(agent_server, sid)
    reply = envelope_in(step_requests(fake, marker)[1], "pages.json")
    assert str(reply["note"]).startswith("Read 3 of 3 page(s)")


def test_the_agent_cannot_reach_another_slots_devtools_or_this_service(
    agent_server: ServerProcess, fake: FakeProvider
) -> None:
    """What a hostile page would ask the agent to do (spec §19.2, §24.4): open another slot's DevTools list, or this
    service's own API. Both are refused at the sandbox's boundary and the feed says so."""
    with httpx.Client(base_url=agent_server.base_url, timeout=30) as http:
        other = create_browser(http)  # another live slot, whose DevTools a page would love to drive
        try:
            ports = [slot_layout(agent_server.slot_base + i).cdp_port for i in range(3)]
            marker = token("DEVTOOLS")
            steps = [navigate(f"http://127.0.0.1:{port}/json/list") for port in ports]
            steps.append(navigate(f"http://127.0.0.1:{agent_server.port}/v3/sessions"))
            fake.script(marker, [*steps, done("looked")], when=agent_steps)
            session = create(agent_server, task=f"{marker} Look at the debugging endpoints.")
            finished = wait_until_status(agent_server, session["id"], {"stopped", "error"}, timeout=180)
        finally:
            stop_browser(http, other["id"])
    assert finished["status"] == "stopped", finished["lastStepSummary"]
    requests = step_requests(fake, marker)
    assert len(requests) == len(steps) + 1
    for request in requests[1:]:
        assert "webSocketDebuggerUrl" not in request.text
        assert "devtools/page" not in request.text
    assert "Blocked by OpenBrowse network policy" in requests[-1].text
    refusals = [data_of(m) for m in messages(agent_server, session["id"]) if data_of(m).get("category") == "network"]
    assert {r.get("rule") for r in refusals} >= {"slot_endpoint", "service_port"}
