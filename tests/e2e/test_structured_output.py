"""Structured output end to end: the answer store, the completeness gate, salvage on a budget stop, the reviewer.

The careers fixture lists 14 vacancies on a cross-origin board (an iframe from a second port); each vacancy
has a detail page carrying JSON-LD. ``find_links``/``read_pages`` are not on this branch, so the scripted agent
reads the detail pages with ``evaluate`` on the board's origin (its page-shaped result feeds the evidence
corpus) and loads the rows with ``write_file`` + ``add_items_from_file``.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.e2e.agent_support import create, data_of, messages, token, wait_until_status
from tests.fakes.llm_request import LLMRequest
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
READ_DETAIL_PAGES = (
    "(async () => { const pages = []; "
    "for (const a of Array.from(document.querySelectorAll('a'))) { "
    "const html = await (await fetch(a.href)).text(); "
    "const doc = new DOMParser().parseFromString(html, 'text/html'); "
    "const ld = doc.querySelector('script[type=\"application/ld+json\"]'); "
    "pages.push({url: a.href, title: doc.title, text: doc.body.textContent, "
    "jsonld: ld ? JSON.parse(ld.textContent) : null}); } "
    "return JSON.stringify(pages); })()"
)


def agent_steps(request: LLMRequest) -> bool:
    return request.is_agent_step


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


READ_PAGES_STEP = agent_step({"evaluate": {"code": READ_DETAIL_PAGES}}, next="Read every vacancy page.")


def load_rows(rows: list[dict[str, Any]]) -> dict[str, Any]:
    return agent_step(
        [
            {"write_file": {"file_name": "jobs.json", "content": json.dumps(rows)}},
            {"add_items_from_file": {"name": "jobs.json"}},
        ],
        next="Load the rows read from the vacancy pages into the output.",
    )


def events(feed: list[dict[str, Any]], category: str, action: str) -> list[dict[str, Any]]:
    return [
        m
        for m in feed
        if m["type"] == "event" and data_of(m)["category"] == category and data_of(m)["action"] == action
    ]


async def test_careers_board_fills_the_store_through_the_gate(
    agent_server: ServerProcess, fake: FakeProvider, site: FixtureSites
) -> None:
    marker = token("CAREERS")
    rows = truth(site)
    fake.script(
        marker,
        [
            navigate(f"{site.url}/careers"),
            done("The careers page lists the vacancies."),  # too early: bounced by the gate
            navigate(f"{site.panel_url}/board"),
            READ_PAGES_STEP,
            load_rows(rows),
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
    finished = wait_until_status(agent_server, session["id"], {"stopped", "error"}, timeout=240)
    assert finished["status"] == "stopped", finished["lastStepSummary"]
    assert finished["isTaskSuccessful"] is True and finished["failureKind"] is None
    assert finished["output"] == {"company": CAREER_COMPANY, "jobs": [{**row, "salary": None} for row in rows]}
    feed = messages(agent_server, session["id"])
    gate = events(feed, "schema", "completeness")
    assert [m["summary"] for m in gate] == [
        "Completeness gate: company (not set); jobs: no items",
        "Completeness check passed — Coverage — jobs: 14 item(s); filled on all: title, jobUrl, location, "
        "employment, datePosted; marked absent: salary.",
    ]
    steps = [data_of(m) for m in feed if m["type"] in {"result", "browser_action", "browser_action_error"}]
    load = next(s for s in steps if "add_items_from_file" in s["actions"])
    assert load["coverage"].startswith("Coverage — jobs: 14 item(s); filled on all: title, jobUrl")
    assert "coverage" not in steps[0]
    reviews = events(feed, "judge", "review")
    assert [data_of(m)["verdict"] for m in reviews] == ["pass"]
    judge_call = next(r for r in fake.requests_matching(marker) if r.is_review)
    assert "STRUCTURED OUTPUT" in judge_call.text and "Recruiter" in judge_call.text
    assert not events(feed, "judge", "dissent")
    mirror = json.loads((agent_server.home / "data" / "sessions" / session["id"] / "output.json").read_text())
    assert mirror == {"company": CAREER_COMPANY, "jobs": rows}


async def test_budget_stop_keeps_the_partial_store(
    agent_server: ServerProcess, fake: FakeProvider, site: FixtureSites
) -> None:
    marker = token("BUDGET")
    rows = truth(site)[:5]
    expensive = (200_000, 0)  # $0.40 per step on gpt-5.6-terra: after the third, less than a step's cost is left
    fake.script(
        marker,
        [
            structured(navigate(f"{site.panel_url}/board"), usage=expensive),
            structured(READ_PAGES_STEP, usage=expensive),
            structured(load_rows(rows), usage=expensive),
            structured(done("never reached"), usage=expensive),
        ],
        when=agent_steps,
    )
    session = create(
        agent_server, task=f"{marker} List every vacancy on {site.url}/careers.", outputSchema=SCHEMA, maxCostUsd=1.5
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
            navigate(f"{site.panel_url}/board"),
            READ_PAGES_STEP,
            load_rows(rows),
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
