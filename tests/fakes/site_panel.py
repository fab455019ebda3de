"""The cross-origin panel site: a jobs panel, product detail frames and the careers board.

The careers board lists 14 vacancies whose detail pages carry ``JobPosting`` JSON-LD; :func:`career_records` is
its ground truth.
"""

from __future__ import annotations

import html
import json

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from tests.fakes.site_pages import page

CAREER_COMPANY = "Fixture Careers Ltd"
CAREER_TITLES = (
    "Backend Engineer",
    "Frontend Engineer",
    "Data Analyst",
    "Product Manager",
    "QA Engineer",
    "Site Reliability Engineer",
    "UX Designer",
    "Technical Writer",
    "Support Specialist",
    "Sales Engineer",
    "Security Engineer",
    "ML Engineer",
    "Office Manager",
    "Recruiter",
)
CAREER_CITIES = ("Berlin", "Lisbon", "Remote")


def career_records() -> list[dict[str, str]]:
    """Ground truth of the careers board: 14 vacancies, each with its own detail page (URL path included)."""
    return [
        {
            "title": title,
            "path": f"/board/job/{n}",
            "location": CAREER_CITIES[n % 3],
            "employment": "Part-time" if n % 4 == 0 else "Full-time",
            "datePosted": f"2026-10-{n:02d}",
        }
        for n, title in enumerate(CAREER_TITLES, start=1)
    ]


PANEL_JOBS = 24


def panel_app() -> Starlette:
    async def panel(request: Request) -> Response:
        jobs = "".join(f'<li><a href="/job/{n}">Engineer {n}</a></li>' for n in range(1, PANEL_JOBS + 1))
        return page("Panel", f"<ul>{jobs}</ul>")

    async def job(request: Request) -> Response:
        number = request.path_params["n"]
        return page(f"Engineer {number}", f"<p>Engineer {number} builds things. Location: Remote.</p>")

    async def detail(request: Request) -> Response:
        number = request.path_params["n"]
        return page(f"Detail {number}", f"<p>Detail {number}: weight {number} kg, made of oak.</p>")

    records = {r["path"]: r for r in career_records()}

    async def board(request: Request) -> Response:
        rows = "".join(f'<li><a href="{r["path"]}">{html.escape(r["title"])}</a></li>' for r in records.values())
        host = request.query_params.get("host")
        if host:  # an embed script that routes clicks itself: every href points at the host page
            rows += (
                "<script>for (const a of document.querySelectorAll('a')) { a.dataset.href = a.getAttribute('href');"
                f" a.href = {json.dumps(host)} + '#vacancy'; a.onclick = e => {{ e.preventDefault();"
                " location.href = a.dataset.href; }; }</script>"
            )
        return page("Jobs board", f"<ul>{rows}</ul>")

    async def vacancy(request: Request) -> Response:
        record = records.get(request.url.path)
        if record is None:
            return page("Not found", "<p>No such vacancy.</p>")
        about = (
            f"As our {record['title']} you join a small team that ships every week, owns its work from the first "
            "sketch to production and reviews its peers' changes."
        )
        jsonld = {
            "@context": "https://schema.org",
            "@type": "JobPosting",
            "title": record["title"],
            "datePosted": record["datePosted"],
            "employmentType": record["employment"].upper().replace("-", "_"),  # FULL_TIME, as schema.org does
            "jobLocation": {"@type": "Place", "address": {"addressLocality": record["location"]}},
            "hiringOrganization": {"@type": "Organization", "name": CAREER_COMPANY},
        }
        return page(
            record["title"],
            f'<script type="application/ld+json">{json.dumps(jsonld)}</script>'
            f"<p>Location: {html.escape(record['location'])}</p><p>Employment: {record['employment']}</p>"
            f"<p>{html.escape(about)}</p><p>Apply by email to the hiring team.</p>",
        )

    return Starlette(
        routes=[
            Route("/panel", panel),
            Route("/job/{n}", job),
            Route("/detail/{n}", detail),
            Route("/board", board),
            Route("/board/job/{n}", vacancy),
        ]
    )
