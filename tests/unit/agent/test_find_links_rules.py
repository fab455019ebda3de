"""find_links' pure rules (spec §11.1): off-host flags, and when a panel's anchors count as rewritten."""

from __future__ import annotations

from openbrowse.agent.tools.find_links import FindLinksParams, _filter, _rewritten

HOST = "https://company.example/careers"


def test_links_off_the_majority_host_are_flagged_and_duplicates_dropped() -> None:
    raw = [
        {"href": "https://jobs.example/1", "text": "One"},
        {"href": "https://jobs.example/2", "text": "Two"},
        {"href": "https://jobs.example/2", "text": "Two again"},
        {"href": "https://other.example/x", "text": "Elsewhere"},
        {"href": "mailto:hr@jobs.example", "text": "Mail"},
    ]
    links = _filter(raw, FindLinksParams())
    assert [(link["href"], link.get("offhost", False)) for link in links] == [
        ("https://jobs.example/1", False),
        ("https://jobs.example/2", False),
        ("https://other.example/x", True),
    ]
    assert [link["href"] for link in _filter(raw, FindLinksParams(href_contains="/2"))] == ["https://jobs.example/2"]


def test_a_panel_is_rewritten_when_most_anchors_point_at_the_host_page() -> None:
    rewritten = [{"href": f"{HOST}#vacancy"} for _ in range(14)] + [{"href": "https://jobs.example/privacy"}]
    assert _rewritten(rewritten, HOST)
    assert not _rewritten([{"href": f"{HOST}#top"}, *({"href": f"https://jobs.example/{n}"} for n in range(5))], HOST)
    assert not _rewritten([{"href": HOST}], HOST)  # one back-link is not a rewrite
