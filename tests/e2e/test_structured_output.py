"""Structured output end to end: the answer store, the completeness gate, salvage, the reviewer and outcomes.

The careers fixture lists 14 vacancies on a cross-origin board (an iframe from a second port); each vacancy
has a detail page carrying JSON-LD. The scripted agent works as a real one would: ``find_links`` inside the
board's frame, ``read_pages()`` for the detail pages, then a ``run_code_file`` script that builds the rows from
``pages.json`` (``read_json``, ``pick_jsonld``) and writes them with the store's own ``add_item``.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.e2e.agent_support import agent_steps, create, data_of, messages, token, wait_until_status
from tests.fakes.llm_script import Fault, agent_step, done, is_review, navigate, structured, text, verdict
from tests.fakes.llm_server import FakeProvider
from tests.fakes.site import CAREER_COMPANY, FixtureSites, career_records
from tests.support.server import ServerProcess

pytestmark = [pytest.mark.e2e, pytest.mark.display]

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "company": {"type": "string"},
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
                    "salary": {"type": ["string", "null"]},
                },
                "required": ["title", "jobUrl", "location", "employment", "datePosted"],
            },
        },
    },
    "required": ["company", "jobs"],
}
BUILD_ROWS = """
pages = {page["url"]: page for page in read_json("pages.json")}
for link in read_json("found_links.json")[:LIMIT]:
    page = pages[link["href"]]
    [job] = pick_jsonld(page["jsonld"], "JobPosting")
    add_item({
        "title": job["title"],
        "jobUrl": page["url"],
        "location": job["jobLocation"]["address"]["addressLocality"],
        "employment": job["employmentType"].replace("_", "-").capitalize(),
        "datePosted": job["datePosted"],
    })
print(coverage())
"""


def truth(site: FixtureSites) -> list[dict[str, Any]]:
    return [
        {
            "title": r["title"],
            "jobUrl": site.panel_url + r["path"],
            "location": r["location"],
            "employment": r["employment"],
            "datePosted": r["datePosted"],
        }
        for r in career_records()
    ]


def find_board_links(site: FixtureSites) -> dict[str, Any]:
    return agent_step(
        {"find_links": {"frame_url_contains": f"127.0.0.1:{site.panel_port}"}}, next="Collect the vacancy links."
    )


READ_PAGES_STEP = agent_step({"read_pages": {}}, next="Read every vacancy page.")


def build_rows(limit: int = 14) -> dict[str, Any]:
    code = BUILD_ROWS.replace("LIMIT", str(limit))
    return agent_step(
        {"run_code_file": {"name": "build_rows", "code": code}}, next="Build the rows from the pages' JSON-LD."
    )


def events(feed: list[dict[str, Any]], category: str, action: str) -> list[dict[str, Any]]:
    return [
        m
        for m in feed
        if m["type"] == "event" and data_of(m)["category"] == category and data_of(m)["action"] == action
    ]


def step_rows(feed: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [data_of(m) for m in feed if m["type"] in {"result", "browser_action", "browser_action_error"}]


async def test_careers_board_fills_the_store_through_the_gate(
    agent_server: ServerProcess, fake: FakeProvider, site: FixtureSites
) -> None:
    marker = token("CAREERS")
    rows = truth(site)
    fake.script(
        marker,
        [
            navigate(f"{site.url}/careers"),
            find_board_links(site),
            done("The careers page lists the vacancies."),  # too early: bounced by the gate
            READ_PAGES_STEP,
            build_rows(),
            agent_step(
                [
                    {"set_field": {"key": "company", "value": CAREER_COMPANY}},
                    {"mark_absent": {"fields": ["salary"], "reason": "No vacancy page states a salary."}},
                ],
                next="Record the company and settle the salary field.",
            ),
            done("All 14 vacancies are in the output."),
        ],
        when=agent_steps,
    )
    session = create(
        agent_server, task=f"{marker} List every vacancy on {site.url}/careers with its details.", outputSchema=SCHEMA
    )
    finished = wait_until_status(agent_server, session["id"], {"stopped", "error"}, timeout=300)
    assert finished["status"] == "stopped", finished["lastStepSummary"]
    assert finished["isTaskSuccessful"] is True and finished["failureKind"] is None
    assert finished["output"] == {"company": CAREER_COMPANY, "jobs": [{**row, "salary": None} for row in rows]}

    feed = messages(agent_server, session["id"])
    gate = [data_of(m) for m in events(feed, "schema", "completeness")]
    urls = [row["jobUrl"] for row in rows]
    bounce = [
        "company (not set)",
        "jobs: no items",
        f"find_links kept 14 link(s) but the output has 0 item(s); not turned into items: {', '.join(urls[:8])} "
        "(+6 more)",
    ]
    assert [(g["passed"], g["deficiencies"]) for g in gate] == [(False, bounce), (True, [])]
    passed = events(feed, "schema", "completeness")[1]["summary"]
    assert passed == (
        "Completeness check passed — Coverage — jobs: 14 item(s); filled on all: title, jobUrl, location, "
        "employment, datePosted; marked absent: salary."
    )
    after_bounce = [r for r in fake.requests_matching(marker) if r.is_agent_step][3]
    assert "done was NOT accepted" in after_bounce.text and urls[7] in after_bounce.text

    steps = step_rows(feed)
    script = next(s for s in steps if s["actions"] == ["run_code_file"])
    assert script["coverage"].startswith("Coverage — jobs: 14 item(s); filled on all: title, jobUrl")
    assert "coverage" not in steps[0]
    absent = next(s for s in steps if "mark_absent" in s["actions"])
    assert absent["coverage"].endswith("marked absent: salary.")

    reviews = events(feed, "judge", "review")
    assert [data_of(m)["verdict"] for m in reviews] == ["pass"]
    judge_call = next(r for r in fake.requests_matching(marker) if r.is_review)
    assert "STRUCTURED OUTPUT" in judge_call.text and "Recruiter" in judge_call.text
    assert not events(feed, "judge", "dissent")
    files = agent_server.home / "data" / "sessions" / session["id"]
    assert json.loads((files / "output.json").read_text()) == {"company": CAREER_COMPANY, "jobs": rows}
    assert len(json.loads((files / "pages.json").read_text())) == 14


async def test_budget_stop_keeps_the_partial_store(
    agent_server: ServerProcess, fake: FakeProvider, site: FixtureSites
) -> None:
    marker = token("BUDGET")
    rows = truth(site)[:5]
    expensive = (150_000, 0)  # $0.30 per step on gpt-5.6-terra: after the fourth, less than a step's cost is left
    fake.script(
        marker,
        [
            structured(navigate(f"{site.url}/careers"), usage=expensive),
            structured(find_board_links(site), usage=expensive),
            structured(READ_PAGES_STEP, usage=expensive),
            structured(build_rows(5), usage=expensive),
            structured(done("never reached"), usage=expensive),
        ],
        when=agent_steps,
    )
    session = create(
        agent_server, task=f"{marker} List every vacancy on {site.url}/careers.", outputSchema=SCHEMA, maxCostUsd=1.4
    )
    finished = wait_until_status(agent_server, session["id"], {"stopped", "error"}, timeout=240)
    assert finished["status"] == "stopped" and finished["failureKind"] == "budget_exceeded"
    assert finished["lastStepSummary"].startswith("Stopped: Cost $")
    assert finished["lastStepSummary"].endswith("A partial output of 5 items is kept.")
    assert finished["isTaskSuccessful"] is False
    assert finished["output"]["jobs"] == [{**row, "salary": None} for row in rows]
    completion = [m for m in messages(agent_server, session["id"]) if m["type"] == "completion"][-1]
    assert completion["summary"] == finished["lastStepSummary"]


async def test_reviewer_change_request_leads_to_a_second_round(agent_server: ServerProcess, fake: FakeProvider) -> None:
    marker = token("REVIEW")
    fake.script(marker, [done("The answer is 41."), done("The answer is 42.")], when=agent_steps)
    fake.script(marker, [verdict(False, "The answer must be 42."), verdict(True)], when=is_review)
    session = create(agent_server, task=f"{marker} Say the answer.")
    finished = wait_until_status(agent_server, session["id"], {"stopped", "error"})
    assert finished["isTaskSuccessful"] is True and finished["output"] == "The answer is 42."
    feed = messages(agent_server, session["id"])
    reviews = [data_of(m) for m in events(feed, "judge", "review")]
    assert [(r["verdict"], r["round"]) for r in reviews] == [("changes", 0), ("pass", 1)]
    assert events(feed, "judge", "review")[0]["summary"] == "The answer must be 42."
    done_rows = [data_of(m) for m in feed if m["type"] == "result" and data_of(m)["action"] == "done"]
    assert [d.get("reviewReply") for d in done_rows] == [None, "resubmitted"]
    second_step = [r for r in fake.requests_matching(marker) if r.is_agent_step][1]
    assert (
        "a reviewer requests changes: The answer must be 42.; apply them and call done again, or, if confident the "
        "review is wrong, reply via done explaining why (2 replies remaining)"
    ) in second_step.text
    assert len([r for r in fake.requests_matching(marker) if r.is_review]) == 2


async def test_pushed_back_review_ends_with_a_dissent_note(agent_server: ServerProcess, fake: FakeProvider) -> None:
    marker = token("PUSHBACK")
    fake.script(marker, [done("The answer is 41.").copy() for _ in range(4)], when=agent_steps)
    fake.script(marker, [verdict(False, "The answer must be 42.")] * 4, when=is_review)
    session = create(agent_server, task=f"{marker} Say the answer.")
    finished = wait_until_status(agent_server, session["id"], {"stopped", "error"})
    assert finished["isTaskSuccessful"] is True  # the judge never changes the recorded outcome
    feed = messages(agent_server, session["id"])
    reviews = [data_of(m) for m in events(feed, "judge", "review")]
    assert [(r["verdict"], r["round"]) for r in reviews] == [("changes", n) for n in range(4)]
    dissent = events(feed, "judge", "dissent")
    assert [(data_of(m)["verdict"], data_of(m)["recorded"]) for m in dissent] == [("FAIL", "success")]
    steps = [r for r in fake.requests_matching(marker) if r.is_agent_step]
    assert len(steps) == 4
    assert "(1 replies remaining)" in steps[2].text
    assert "you have already replied twice without changing the answer" in steps[3].text
    done_rows = [data_of(m) for m in feed if m["type"] == "result" and data_of(m)["action"] == "done"]
    assert [d.get("reviewReply") for d in done_rows] == [None, "replied", "replied", "replied"]


async def test_unusable_replies_after_a_valid_store_still_deliver(
    agent_server: ServerProcess, fake: FakeProvider, site: FixtureSites
) -> None:
    marker = token("SALVAGE")
    rows = truth(site)
    fake.script(
        marker,
        [
            navigate(f"{site.url}/careers"),
            find_board_links(site),
            READ_PAGES_STEP,
            build_rows(),
            agent_step({"set_field": {"key": "company", "value": CAREER_COMPANY}}, next="Record the company."),
            Fault.malformed("json").forever(),
        ],
        when=agent_steps,
    )
    session = create(agent_server, task=f"{marker} List every vacancy on {site.url}/careers.", outputSchema=SCHEMA)
    finished = wait_until_status(agent_server, session["id"], {"stopped", "error"}, timeout=240)
    assert finished["status"] == "stopped", finished["lastStepSummary"]
    assert finished["isTaskSuccessful"] is True and finished["failureKind"] is None
    assert finished["output"] == {"company": CAREER_COMPANY, "jobs": [{**row, "salary": None} for row in rows]}
    feed = messages(agent_server, session["id"])
    [event] = events(feed, "judge", "storeComplete")
    assert event["summary"] == "Run ended without done, but the output store is schema-valid — recorded as delivered"
    assert data_of(event)["gatePassed"] is False  # salary is neither filled nor marked absent
    assert not events(feed, "judge", "review")


async def test_prose_mode_reformats_the_final_answer_once(agent_server: ServerProcess, fake: FakeProvider) -> None:
    marker = token("PROSE")
    schema = {"type": "object", "properties": {"answer": {"anyOf": [{"type": "string"}, {"type": "integer"}]}}}
    fake.script(marker, [done(f"The answer is forty-two ({marker}).")], when=agent_steps)
    fake.script(marker, [text('{"answer": 42}')], when=lambda r: "OPENBROWSE-REFORMAT" in r.text)
    session = create(agent_server, task=f"{marker} Say the answer.", outputSchema=schema)
    finished = wait_until_status(agent_server, session["id"], {"stopped", "error"})
    assert finished["isTaskSuccessful"] is True and finished["output"] == {"answer": 42}
    requests = fake.requests_matching(marker)
    assert "OUTPUT FORMAT" in next(r for r in requests if r.is_agent_step).text
    assert len([r for r in requests if "OPENBROWSE-REFORMAT" in r.text]) == 1
    assert not (agent_server.home / "data" / "sessions" / session["id"] / "output.json").exists()


async def test_a_run_code_file_script_writes_to_the_store(
    agent_server: ServerProcess, fake: FakeProvider, site: FixtureSites
) -> None:
    """The store's operations are bound in the sandbox, with the store's own validation (spec §11.3)."""
    marker = token("SANDBOXSTORE")
    schema = {
        "type": "object",
        "properties": {
            "products": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {"name": {"type": "string"}, "price": {"type": "number"}},
                    "required": ["name", "price"],
                },
            }
        },
        "required": ["products"],
    }
    code = (
        "add_item({'name': 'Blue Widget', 'price': 42})\n"
        "update_items([{'index': 0, 'fields': {'price': 41.5}}])\n"
        "try:\n"
        "    add_item({'name': 'Bad', 'price': 'not a number'})\n"
        "except Exception as refused:\n"
        "    print('refused:', refused)\n"
        "print(coverage())\n"
    )
    fake.script(
        marker,
        [
            navigate(f"{site.url}/"),
            agent_step({"run_code_file": {"name": "fill", "code": code}}, next="Fill the output from a script."),
            done("The output holds the product."),
        ],
        when=agent_steps,
    )
    session = create(agent_server, task=f"{marker} List the products on {site.url}/", outputSchema=schema)
    finished = wait_until_status(agent_server, session["id"], {"stopped", "error"}, timeout=240)
    assert finished["status"] == "stopped", finished["lastStepSummary"]
    assert finished["output"] == {"products": [{"name": "Blue Widget", "price": 41.5}]}
    assert finished["isTaskSuccessful"] is True
    script_rows = [m for m in messages(agent_server, session["id"]) if data_of(m).get("action") == "run_code_file"]
    snippet = data_of(script_rows[-1]).get("resultSnippet", "")
    assert "refused:" in snippet and "Coverage" in snippet, snippet
