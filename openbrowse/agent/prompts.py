"""The system prompt: browser-use's own prompt with its cloud-only claims corrected, plus our additions."""

from __future__ import annotations

import importlib.resources
import re
from collections.abc import Sequence

MAX_ACTIONS_PER_STEP = 8

_CAPTCHA_CLAIMS = [
    (
        re.compile(r"- CAPTCHAs are automatically solved by the browser\..*?resolved\.\n"),
        "- CAPTCHAs are NOT solved automatically in this session. {captcha}\n",
    ),
    (re.compile(r"CAPTCHAs are handled automatically\."), "{captcha_short}"),
    (re.compile(r"CAPTCHAs are solved automatically\."), "{captcha_short}"),
    (re.compile(r"\(auto-solved CAPTCHAs, "), "("),
]

NO_SOLVER = (
    "No CAPTCHA solver is available: if a CAPTCHA blocks the task, do not try to solve it by hand; report the "
    "block honestly in done with success=false and say what you could not reach."
)
NO_SOLVER_SHORT = "CAPTCHAs are not solved for you: report a blocking CAPTCHA honestly."
SOLVER = (
    "Call solve_captcha when a CAPTCHA blocks the page; it detects the type itself and reports the outcome, then "
    "submit or continue as a user would. If it refuses (spend ceiling, repeated failures, a type it never "
    "attempts) or fails, report the block honestly in done with success=false instead of solving it by hand."
)
SOLVER_SHORT = "CAPTCHAs can be solved with the solve_captcha action."

CARDS = """<cards>
Every reply must include, before anything else you write, three one-sentence fields:
- what_i_see: what the current page shows that matters for the task;
- plan_to_goal: the remaining path from here to the goal;
- next_move: what this step's actions do and why.
They are shown to the person watching the run, so keep them concrete and short.
</cards>"""

ACTION_CONTRACT = (
    "Every reply must include the `action` list with at least one action. Chain up to "
    f"{MAX_ACTIONS_PER_STEP} actions in one step when they act on the same page state; the chain stops at the "
    "first action that changes the page."
)

GOAL_NOTE = (
    "The task ends with a line `GOAL: ...` stating what a complete and correct result looks like. The run is "
    "not done until that goal is met; it is repeated to you every ten steps."
)

LIST_PAGES = "List pages are a table of contents: open each item's own page to read its details."

CLIPBOARD = (
    "You have a clipboard: remember(key, value) stores a small value for later steps and recall(key) reads it. "
    "It already holds `goal` and, when the task names a URL, `startUrl`."
)

OVERLAYS = (
    "An overlay (cookie banner, modal, popup) counts as dismissed only if it stays gone; if it comes back, try "
    "at most two more times, then work around it."
)


READING_PATH = (
    "Extraction golden path: open the list page, call find_links (with href_contains, or frame_url_contains for "
    "a list inside an embedded panel) to collect every item link in one call, then read_pages() with no "
    "arguments to read them all in parallel tabs (48 per call; call it again bare while URLs remain queued), "
    "then work from the returned data and pages.json instead of visiting items one by one. Never guess values "
    "that no page showed."
)
FETCH_NOTE = (
    "http_fetch makes one server-side request and saves the body to a file; use it for feeds, JSON or files a "
    "page links to, never to call a site's backend API instead of reading its pages."
)
DELIVERY_NOTE = (
    "Large tool outputs are saved to files (the reply names them) and shown as a preview; read the file with "
    "read_file instead of repeating the call. An output you already saw is not repeated."
)


def tool_notes(action_names: Sequence[str]) -> list[str]:
    """How to use the added tools that are registered in this session."""
    names = set(action_names)
    notes: list[str] = []
    if {"find_links", "read_pages"} <= names:
        notes.append(READING_PATH)
    if "http_fetch" in names:
        notes.append(FETCH_NOTE)
    if names & {"find_links", "read_pages", "http_fetch"}:
        notes.append(DELIVERY_NOTE)
    return notes


def stock_prompt() -> str:
    template = (
        importlib.resources.files("browser_use.agent.system_prompts").joinpath("system_prompt.md").read_text("utf-8")
    )
    return template.format(max_actions=MAX_ACTIONS_PER_STEP)


def correct_captcha_claims(prompt: str, *, solver: bool) -> str:
    values = {
        "captcha": SOLVER if solver else NO_SOLVER,
        "captcha_short": SOLVER_SHORT if solver else NO_SOLVER_SHORT,
    }
    for pattern, replacement in _CAPTCHA_CLAIMS:
        prompt = pattern.sub(replacement.format(**values), prompt)
    return prompt


def system_prompt(*, extension: str | None, action_names: Sequence[str], solver: bool, start_url: str | None) -> str:
    """browser-use's prompt (claims corrected) followed by our additions, in the order of spec §10.3."""
    parts = [correct_captcha_claims(stock_prompt(), solver=solver), "<openbrowse>"]
    if extension:
        parts.append(extension.strip())
    parts += [ACTION_CONTRACT, CARDS, GOAL_NOTE, LIST_PAGES, *tool_notes(action_names)]
    parts.append("Actions available in this session: " + ", ".join(sorted(action_names)) + ".")
    parts += [OVERLAYS, CLIPBOARD, SOLVER if solver else NO_SOLVER]
    if start_url:
        parts.append(f"The start URL ({start_url}) is already open; look at it before navigating elsewhere.")
    parts.append("</openbrowse>")
    return "\n\n".join(parts)


def output_format_block(schema_json: str) -> str:
    """Prose mode: the schema rides in the task and the final answer must match it."""
    return (
        "\n\nOUTPUT FORMAT: when you call done, its text must be a single JSON value matching this JSON Schema "
        f"(no prose around it):\n{schema_json}"
    )
