"""Draft rows (spec §11.2): JSON-LD and labelled specs matched to schema fields, every value checked by the store."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings, strategies as st

from openbrowse.agent.structured.answer_store import AnswerStore
from openbrowse.agent.structured.draft_rows import clean_text, draft_rows, flatten, labelled_specs, match, words
from openbrowse.agent.structured.evidence import EvidenceCorpus
from openbrowse.agent.structured.schema_model import Node, convert, errors, own_url_field

JOB = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "title": {"type": "string"},
        "applyUrl": {"type": "string"},
        "jobUrl": {"type": "string"},
        "location": {"type": "string"},
        "employment": {"type": "string", "enum": ["Full-time", "Part-time"]},
        "datePosted": {"type": "string"},
        "company": {"type": ["string", "null"]},
        "description": {"type": "string"},
        "salary": {"type": ["integer", "null"]},
        "team": {"type": "string"},
    },
}
SCHEMA: dict[str, Any] = {"type": "object", "properties": {"jobs": {"type": "array", "items": JOB}}}
URL = "https://jobs.example/board/job/3"
JSONLD = {
    "@context": "https://schema.org",
    "@type": "JobPosting",
    "title": "Data Analyst",
    "description": "<p>Crunch <b>numbers</b> &amp; tell stories.</p>",
    "datePosted": "2026-10-03",
    "employmentType": "FULL_TIME",
    "url": "/relative/not/a/url",
    "jobLocation": [
        {
            "@type": "Place",
            "geo": {"@type": "GeoCoordinates", "latitude": 52.5, "longitude": 13.4},
            "address": {"@type": "PostalAddress", "streetAddress": "Main St 1", "addressLocality": "Berlin"},
        }
    ],
    "hiringOrganization": {"@type": "Organization", "name": "Fixture Careers Ltd"},
    "baseSalary": {"@type": "MonetaryAmount", "currency": "EUR", "value": {"value": "52000"}},
}
TEXT = "Data Analyst\nLocation: Berlin\nEmployment: Full-time\nTeam: Insights\nSalary: 52000\n" + "Filler text. " * 20


def store(text: str = TEXT) -> AnswerStore:
    evidence = EvidenceCorpus()
    evidence.add_page(URL, text)
    return AnswerStore(convert(SCHEMA), evidence)


def rows_of(pages: list[dict[str, Any]], answer: AnswerStore | None = None) -> tuple[list[dict[str, Any]], Any]:
    answer = answer or store()
    assert answer.item_node is not None
    return draft_rows(
        answer.item_node,
        answer.own_url_field,
        pages,
        lambda name, value: answer.item_field_problem(name, value) is None,
    )


def test_a_job_page_becomes_a_row_of_its_url_json_ld_and_labelled_specs() -> None:
    rows, source = rows_of([{"url": URL, "title": "Data Analyst", "text": TEXT, "jsonld": [JSONLD]}])
    assert rows == [
        {
            "title": "Data Analyst",
            "applyUrl": None,  # JSON-LD's url is relative: refused by the URL guard, left empty
            "jobUrl": URL,
            "location": "Berlin",  # addressLocality, not the street nor the latitude
            "employment": "Full-time",  # FULL_TIME mapped onto the enum's own spelling
            "datePosted": "2026-10-03",
            "company": "Fixture Careers Ltd",  # hiringOrganization.name
            "description": "Crunch numbers & tell stories.",
            "salary": 52000,  # baseSalary.value.value
            "team": "Insights",  # only the visible text labels it
        }
    ]
    assert source == {URL: 0}


def test_values_the_store_refuses_stay_empty() -> None:
    never_says_full_time = store(text="Location: Berlin " + "words " * 50)
    rows, _ = rows_of(
        [{"url": URL, "text": "Location: Berlin\n" + "x" * 300, "jsonld": [JSONLD]}], never_says_full_time
    )
    assert rows[0]["employment"] is None  # enum values need evidence on a page read this session
    assert rows[0]["location"] == "Berlin"


def test_pages_with_little_text_get_no_row_and_duplicates_one() -> None:
    pages: list[dict[str, Any]] = [
        {"url": "https://a.example/1", "text": "short", "jsonld": [JSONLD]},
        {"url": URL, "text": TEXT, "jsonld": []},
        {"url": URL, "text": TEXT, "jsonld": []},
    ]
    rows, source = rows_of(pages)
    assert len(rows) == 1 and source == {URL: 0}
    assert rows[0]["location"] == "Berlin" and rows[0]["employment"] == "Full-time" and rows[0]["title"] is None


def test_name_matching_rules() -> None:
    assert words("jobLocation.address.addressLocality") == ("job", "location", "address", "address", "locality")
    assert words("HTMLTitle") == ("html", "title")
    exact, inside, ancestor = match("price", "offers.price"), match("price", "offers.priceCurrency"), None
    assert exact is not None and inside is not None and exact < inside
    ancestor = match("location", "jobLocation.address.addressLocality")
    assert ancestor is not None
    street = match("location", "jobLocation.address.streetAddress")
    assert street is not None and ancestor < street
    assert match("location", "jobLocation.geo.latitude") is None
    assert match("company", "hiringOrganization.name") is not None
    assert match("title", "hiringOrganization.name") is None


def test_flatten_drops_indices_graphs_and_at_keys() -> None:
    flat = flatten([{"@graph": [{"@type": "X", "a": {"b": [1, 2]}, "c": [{"d": "x"}, {"d": "y"}]}]}])
    assert flat == [("a.b", [1, 2]), ("c.d", "x")]


def test_labelled_specs_and_html_stripping() -> None:
    text = "Location: Lisbon\nSize\tLarge\nhttps://x.example/a\nJust a sentence.\n"
    assert labelled_specs(text) == [("Location", "Lisbon"), ("Size", "Large")]
    assert clean_text("<div>a&nbsp;<i>b</i></div>\n c") == "a b c"


def test_own_url_field_is_the_items_own_page() -> None:
    node = convert(SCHEMA).fields["jobs"].node.items
    assert own_url_field(node, "jobs") == "jobUrl"
    plain = convert({"type": "object", "properties": {"imageUrl": {"type": "string"}, "link": {"type": "string"}}})
    assert own_url_field(plain) == "link"
    only_apply = convert({"type": "object", "properties": {"applyUrl": {"type": "string"}}})
    assert own_url_field(only_apply) is None


scalars = st.one_of(st.text(max_size=30), st.integers(-1000, 1000), st.booleans(), st.floats(allow_nan=False))
keys = st.sampled_from(["title", "name", "url", "employmentType", "addressLocality", "value", "salary", "x"])
jsonld = st.recursive(
    st.dictionaries(keys, scalars, max_size=4),
    lambda inner: st.dictionaries(keys, st.one_of(scalars, inner, st.lists(inner, max_size=2)), max_size=4),
    max_leaves=12,
)


@settings(max_examples=150, deadline=None)
@given(blocks=st.lists(jsonld, max_size=2), text=st.text(min_size=200, max_size=400))
def test_drafts_are_deterministic_and_every_value_validates(blocks: list[dict[str, Any]], text: str) -> None:
    answer = store(text=text + json.dumps(blocks))
    page = {"url": URL, "text": text, "jsonld": blocks}
    first, _ = rows_of([page], answer)
    again, _ = rows_of([json.loads(json.dumps(page))], answer)
    assert first == again and len(first) == 1
    row = first[0]
    item = answer.item_node
    assert isinstance(item, Node)
    assert set(row) == set(item.fields) and row["jobUrl"] == URL
    assert errors(item, row, partial=True) == []
    for name, value in row.items():
        if value is not None:
            assert answer.item_field_problem(name, value) is None


def test_the_main_entity_outranks_the_sites_other_blocks() -> None:
    schema = {
        "type": "object",
        "properties": {
            "products": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {"name": {"type": "string"}, "sku": {"type": "string"}, "price": {"type": "number"}},
                },
            }
        },
    }
    answer = AnswerStore(convert(schema), EvidenceCorpus())
    blocks = [
        {"@context": "https://schema.org", "@type": "Organization", "name": "Shop Ltd", "url": "https://shop.example"},
        {
            "@context": "https://schema.org",
            "@graph": [
                {"@type": "BreadcrumbList", "itemListElement": [{"@type": "ListItem", "name": "Home"}]},
                {"@type": "Product", "name": "Blue Widget", "sku": "BW-1", "offers": {"price": "42.00"}},
            ],
        },
    ]
    rows, _ = rows_of([{"url": URL, "text": "Posted at 10:30\n" + "Filler. " * 40, "jsonld": blocks}], answer)
    assert rows == [{"name": "Blue Widget", "sku": "BW-1", "price": 42.0}]
