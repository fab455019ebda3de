"""The dashboard's server-rendered pages: every value escaped, data attributes the scripts can read."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from openbrowse.api.dashboard.pages import age, run_page, session_page, sessions_page
from openbrowse.api.schemas import SessionView
from openbrowse.domain.clock import to_wire

HOSTILE = '"><img src=x onerror=alert(1)>'


def view(**changes: object) -> SessionView:
    now = to_wire(datetime.now(UTC))
    base: dict[str, object] = {
        "id": "s-1",
        "status": "running",
        "model": "gpt-5.6-terra",
        "title": HOSTILE,
        "output": None,
        "outputSchema": None,
        "stepCount": 1,
        "lastStepSummary": None,
        "isTaskSuccessful": None,
        "liveUrl": None,
        "profileId": None,
        "maxCostUsd": None,
        "totalInputTokens": 0,
        "totalOutputTokens": 0,
        "llmCostUsd": "0",
        "totalCostUsd": "0.5",
        "reasoningEffort": "low",
        "thinkingLevel": "low",
        "failureKind": None,
        "failureStatusCode": None,
        "keepAlive": False,
        "captchaCostUsd": "0",
        "browserLive": True,
        "createdAt": now,
        "updatedAt": now,
    }
    base.update(changes)
    return SessionView.model_validate(base)


def test_titles_and_ids_are_escaped_everywhere() -> None:
    hostile_id = view(id=HOSTILE)
    for document in (sessions_page([hostile_id], total=1, page=1, page_size=20), session_page(hostile_id)):
        assert "<img" not in document
        assert "&quot;&gt;&lt;img src=x onerror=alert(1)&gt;" in document


def test_session_page_carries_the_id_for_its_script_and_no_inline_script() -> None:
    document = session_page(view())
    assert 'data-session-id="s-1"' in document
    assert '<script type="module" src="/ui/static/session.js"></script>' in document
    assert document.count("<script") == 1 and " style=" not in document  # CSP: scripts and styles from files only
    assert '<span id="steps">1 step</span>' in document


def test_sessions_page_paging_links() -> None:
    document = sessions_page([view()] * 20, total=45, page=2, page_size=20)
    assert "Page 2 of 3 · 45 sessions" in document
    assert 'data-page-number="2"' in document and 'data-page-size="20"' in document
    assert 'href="/?page=1">Newer' in document and 'href="/?page=3">Older' in document
    last = sessions_page([view()] * 5, total=45, page=3, page_size=20)
    assert 'href="/?page=4" hidden>Older' in last


def test_run_page_lists_models_and_efforts() -> None:
    document = run_page(["claude-sonnet-5", "gpt-5.6-terra"], ["default", "none", "low"])
    assert '<option value="gpt-5.6-terra">gpt-5.6-terra</option>' in document
    assert '<option value="" selected>Server default</option>' in document
    assert '<option value="none">none</option>' in document


def test_age_wording() -> None:
    now = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
    assert age(to_wire(now - timedelta(seconds=12)), now) == "12 s ago"
    assert age(to_wire(now - timedelta(minutes=5, seconds=3)), now) == "5 min ago"
    assert age(to_wire(now - timedelta(hours=3)), now) == "3 h ago"
    assert age(to_wire(now - timedelta(days=2, hours=1)), now) == "2 d ago"
    assert age(to_wire(now + timedelta(seconds=5)), now) == "0 s ago"
