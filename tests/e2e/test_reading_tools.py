"""find_links and read_pages through real runs: links in cross-origin panels and lazy lists, pages read in waves
with a resumable queue, shell reads re-read inside their panel, draft rows loaded into the store, rescans of
suspicious scans."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.e2e.agent_support import (
    agent_steps,
    create,
    data_of,
    envelope_in,
    messages,
    session_files,
    step_requests,
    token,
    wait_until_status,
)
from tests.fakes.llm_script import agent_step, done, navigate
from tests.fakes.llm_server import FakeProvider
from tests.fakes.site import SLOW_LIST_ITEMS, FixtureSites, career_records
from tests.support.server import ServerProcess

pytestmark = [pytest.mark.e2e, pytest.mark.display]

JOBS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "jobs": {
            "type": "array",
            "items": {
                "type": "object",
                "additionalProperties": False,
                "properties": {
                    "title": {"type": "string"},
                    "jobUrl": {"type": "string"},
                    "location": {"type": "string"},
                    "employment": {"type": "string", "enum": ["Full-time", "Part-time"]},
                    "datePosted": {"type": "string"},
                },
                "required": ["title", "jobUrl", "location", "employment", "datePosted"],
            },
        }
    },
    "required": ["jobs"],
}


def read_events(server: ServerProcess, session_id: str) -> list[str]:
    return [
        m["summary"] for m in messages(server, session_id) if m["type"] == "event" and data_of(m)["category"] == "read"
    ]


def test_careers_board_draft_rows_load_into_the_store_as_the_ground_truth(
    agent_server: ServerProcess, fake: FakeProvider, site: FixtureSites
) -> None:
    marker = token("DRAFTS")
    board = f"127.0.0.1:{site.panel_port}"
    fake.script(
        marker,
        [
            navigate(f"{site.url}/careers"),
            agent_step([{"find_links": {"frame_url_contains": board}}]),
            agent_step([{"read_pages": {}}]),
            agent_step([{"add_items_from_file": {"name": "rows_draft.json"}}]),
            done("Listed every vacancy."),
        ],
        when=agent_steps,
    )
    session = create(agent_server, task=f"{marker} List every vacancy on {site.url}/careers.", outputSchema=JOBS_SCHEMA)
    sid = session["id"]
    finished = wait_until_status(agent_server, sid, {"stopped", "error"}, timeout=300)
    assert finished["status"] == "stopped", finished["lastStepSummary"]
    truth = [
        {
            "title": r["title"],
            "jobUrl": site.panel_url + r["path"],
            "location": r["location"],
            "employment": r["employment"],
            "datePosted": r["datePosted"],
        }
        for r in career_records()
    ]
    assert finished["output"] == {"jobs": truth}

    requests = step_requests(fake, marker)
    reply = envelope_in(requests[3], "pages.json")
    assert "14 draft row(s)" in str(reply["note"]) and 'add_items_from_file("rows_draft.json")' in str(reply["note"])
    assert "Added 14 item(s) from rows_draft.json." in requests[4].text
    files = session_files(agent_server, sid)
    assert json.loads((files / "rows_draft.json").read_text()) == truth
    statuses = json.loads((files / "read_pages_status.json").read_text())
    assert [(s["url"], s["sourceRow"]) for s in statuses] == [(row["jobUrl"], n) for n, row in enumerate(truth)]


def test_find_links_salvages_anchors_rewritten_to_the_host_page_and_waits_for_a_late_board(
    agent_server: ServerProcess, fake: FakeProvider, site: FixtureSites
) -> None:
    marker = token("RESCAN")
    board = f"127.0.0.1:{site.panel_port}"
    fake.script(
        marker,
        [
            navigate(f"{site.url}/careers?embed=rewritten"),
            agent_step([{"find_links": {"frame_url_contains": board}}]),
            navigate(f"{site.url}/careers?embed=late"),
            agent_step([{"find_links": {"frame_url_contains": board}}]),
            done("Listed the vacancy links."),
        ],
        when=agent_steps,
    )
    session = create(agent_server, task=f"{marker} List the vacancy links on {site.url}/careers.")
    sid = session["id"]
    finished = wait_until_status(agent_server, sid, {"stopped", "error"}, timeout=300)
    assert finished["status"] == "stopped", finished["lastStepSummary"]
    vacancies = [site.panel_url + r["path"] for r in career_records()]
    requests = step_requests(fake, marker)

    salvaged = envelope_in(requests[2], "found_links.json")
    assert [link["href"] for link in salvaged["data"]] == vacancies
    assert "their real targets were read from data attributes" in str(salvaged["note"])
    late = envelope_in(requests[4], "found_links.json")
    assert [link["href"] for link in late["data"]] == vacancies
    assert [link["text"] for link in late["data"]] == [r["title"] for r in career_records()]

    events = [e for e in read_events(agent_server, sid) if e.startswith("find_links")]
    assert len(events) == 2
    assert events[0].startswith("find_links: 14 link(s) matched") and "read by a relaxed rescan" in events[0]
    assert events[1].startswith("find_links: 14 link(s) matched") and "relaxed" not in events[1]


def test_find_links_rescans_a_listing_whose_items_load_after_the_first_scan(
    agent_server: ServerProcess, fake: FakeProvider, site: FixtureSites
) -> None:
    marker = token("SLOWLIST")
    fake.script(
        marker,
        [
            navigate(f"{site.url}/slow-list"),
            agent_step([{"find_links": {"href_contains": "/slow-list/item/"}}]),
            done("Listed the items."),
        ],
        when=agent_steps,
    )
    session = create(agent_server, task=f"{marker} List the items on {site.url}/slow-list.")
    sid = session["id"]
    finished = wait_until_status(agent_server, sid, {"stopped", "error"}, timeout=300)
    assert finished["status"] == "stopped", finished["lastStepSummary"]

    found = envelope_in(step_requests(fake, marker)[2], "found_links.json")
    items = [f"{site.url}/slow-list/item/{n}" for n in range(1, SLOW_LIST_ITEMS + 1)]
    assert [link["href"] for link in found["data"]] == items
    assert f"{SLOW_LIST_ITEMS} link(s) found" in str(found["note"])
    assert json.loads((session_files(agent_server, sid) / "found_links.json").read_text()) == found["data"]
    [event] = [e for e in read_events(agent_server, sid) if e.startswith("find_links")]
    assert event.startswith(f"find_links: {SLOW_LIST_ITEMS} link(s) matched") and "rescanned after" in event


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
