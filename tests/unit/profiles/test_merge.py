"""The three-way merge (spec §9.3): every rule case by case, then properties over random jars."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings, strategies as st

from openbrowse.profiles.merge import cookie_key, three_way_merge

NOW = 1_900_000_000.0
LATER = NOW + 86_400
ORIGIN = "https://app.example.com"


def ck(name: str, value: str, domain: str = ".example.com", **extra: Any) -> dict[str, Any]:
    return {"name": name, "value": value, "domain": domain, "path": "/", "expires": LATER, **extra}


def jar(*cookies: dict[str, Any], local: dict[str, str] | None = None, session: dict[str, str] | None = None) -> Any:
    origins = []
    if local or session:
        origins.append(
            {
                "origin": ORIGIN,
                "localStorage": [{"name": k, "value": v} for k, v in (local or {}).items()],
                "sessionStorage": [{"name": k, "value": v} for k, v in (session or {}).items()],
            }
        )
    return {"cookies": list(cookies), "origins": origins}


def values(result: Any) -> dict[str, str]:
    return {c["name"]: c["value"] for c in result["cookies"]}


def local(result: Any) -> dict[str, str]:
    return {e["name"]: e["value"] for o in result["origins"] for e in o["localStorage"]}


def merge(base: Any, ours: Any, theirs: Any) -> Any:
    return three_way_merge(base, ours, theirs, now=NOW)


@pytest.mark.parametrize(
    ("base", "ours", "theirs", "expected"),
    [
        # ours == base → theirs
        ({}, {}, {}, {}),
        ({"a": "1"}, {"a": "1"}, {"a": "1"}, {"a": "1"}),
        ({"a": "1"}, {"a": "1"}, {"a": "2"}, {"a": "2"}),  # another run updated
        ({"a": "1"}, {"a": "1"}, {}, {}),  # another run deleted
        ({}, {}, {"a": "2"}, {"a": "2"}),  # another run added
        # ours changed, theirs == base → ours
        ({"a": "1"}, {"a": "2"}, {"a": "1"}, {"a": "2"}),  # we updated
        ({"a": "1"}, {}, {"a": "1"}, {}),  # we deleted
        ({}, {"a": "2"}, {}, {"a": "2"}),  # we added
        # both changed → ours, except delete vs update
        ({"a": "1"}, {"a": "2"}, {"a": "3"}, {"a": "2"}),
        ({}, {"a": "2"}, {"a": "3"}, {"a": "2"}),  # both added
        ({"a": "1"}, {}, {"a": "3"}, {"a": "3"}),  # we deleted, they refreshed: the refresh survives
        ({"a": "1"}, {"a": "2"}, {}, {"a": "2"}),  # we refreshed, they deleted: ours
        ({"a": "1"}, {}, {}, {}),  # both deleted
        ({"a": "1"}, {"a": "2"}, {"a": "2"}, {"a": "2"}),  # identical changes
    ],
)
def test_cookie_rules(
    base: dict[str, str], ours: dict[str, str], theirs: dict[str, str], expected: dict[str, str]
) -> None:
    def as_jar(items: dict[str, str]) -> Any:
        return jar(*(ck(k, v) for k, v in items.items()))

    assert values(merge(as_jar(base), as_jar(ours), as_jar(theirs))) == expected
    assert local(merge(jar(local=base or None), jar(local=ours or None), jar(local=theirs or None))) == expected


def test_untouched_keys_keep_other_sessions_values_across_kinds() -> None:
    base = jar(ck("sid", "1"), local={"k": "1"}, session={"s": "1"})
    ours = jar(ck("sid", "1"), ck("mine", "m"), local={"k": "1", "mine": "m"}, session={"s": "1"})
    theirs = jar(ck("sid", "2"), local={"k": "2"}, session={"s": "2"})
    result = merge(base, ours, theirs)
    assert values(result) == {"sid": "2", "mine": "m"}
    assert local(result) == {"k": "2", "mine": "m"}
    assert result["origins"][0]["sessionStorage"] == [{"name": "s", "value": "2"}]


def test_attributes_count_as_changes() -> None:
    base = jar(ck("a", "1"))
    ours = jar(ck("a", "1", httpOnly=True))
    theirs = jar(ck("a", "1"))
    assert merge(base, ours, theirs)["cookies"][0]["httpOnly"] is True
    longer = jar(ck("a", "1", expires=LATER + 10))
    assert merge(base, jar(ck("a", "1")), longer)["cookies"][0]["expires"] == LATER + 10


def test_cookies_are_keyed_by_name_domain_path_and_partition() -> None:
    base = jar()
    ours = jar(ck("a", "ours", domain=".Example.com"), ck("a", "path", path="/x"), ck("a", "other", domain="b.com"))
    theirs = jar(ck("a", "theirs", domain=".example.com"))
    result = merge(base, ours, theirs)
    assert sorted(c["value"] for c in result["cookies"]) == ["other", "ours", "path"]
    assert cookie_key(ck("a", "1")) != cookie_key(ck("a", "1", partitionKey={"topLevelSite": "https://x.com"}))
    assert cookie_key({"name": "a", "domain": ".e.com"}) == cookie_key({"name": "a", "domain": ".E.com", "path": "/"})


def test_expired_cookies_are_dropped_and_session_cookies_kept() -> None:
    stale = ck("old", "1", expires=NOW - 1)
    session_cookie = ck("tab", "1", expires=-1)
    no_expiry = {"name": "bare", "value": "1", "domain": "e.com"}
    result = merge(jar(), jar(stale, session_cookie, no_expiry), jar())
    assert values(result) == {"tab": "1", "bare": "1"}


def test_empty_origins_are_dropped() -> None:
    base = jar(local={"k": "1"})
    result = merge(base, jar(), base)
    assert result["origins"] == []
    theirs_empty_origin = {"cookies": [], "origins": [{"origin": ORIGIN, "localStorage": []}]}
    assert merge(jar(), jar(), theirs_empty_origin)["origins"] == []


def test_malformed_entries_are_ignored() -> None:
    theirs = {
        "cookies": [{"name": "", "value": "x", "domain": "e.com"}, {"name": "ok", "value": "1", "domain": "e.com"}],
        "origins": ["junk", {"origin": ORIGIN, "localStorage": [{"name": 3}, {"name": "k", "value": "v"}, "x"]}],
    }
    result = merge(jar(), jar(), theirs)
    assert values(result) == {"ok": "1"} and local(result) == {"k": "v"}


# -- properties --------------------------------------------------------------------------------------------------

NAMES = st.sampled_from(["a", "b", "c", "d"])
VALUES = st.sampled_from(["1", "2", "3"])
STATES = st.dictionaries(NAMES, VALUES, max_size=4)


def to_jar(cookies: dict[str, str], storage: dict[str, str]) -> Any:
    return jar(*(ck(k, v) for k, v in cookies.items()), local=storage or None)


@settings(max_examples=300, deadline=None)
@given(base=STATES, ours=STATES, theirs=STATES, base_s=STATES, ours_s=STATES, theirs_s=STATES)
def test_merge_properties(
    base: dict[str, str],
    ours: dict[str, str],
    theirs: dict[str, str],
    base_s: dict[str, str],
    ours_s: dict[str, str],
    theirs_s: dict[str, str],
) -> None:
    result = merge(to_jar(base, base_s), to_jar(ours, ours_s), to_jar(theirs, theirs_s))
    for b, o, t, got in ((base, ours, theirs, values(result)), (base_s, ours_s, theirs_s, local(result))):
        for key in set(b) | set(o) | set(t):
            bv, ov, tv, rv = b.get(key), o.get(key), t.get(key), got.get(key)
            if ov != bv and tv == bv:
                assert rv == ov, f"our change to {key} was lost"
            if tv != bv and ov == bv:
                assert rv == tv, f"their change to {key} was lost"
            if ov == tv:
                assert rv == ov, f"identical changes to {key} conflicted"
            if ov is None and bv is not None and tv is not None and tv != bv:
                assert rv == tv, f"a deletion of {key} wiped an update"
            if ov is not None and ov != bv:
                assert rv == ov, f"our update of {key} did not win"


@settings(max_examples=100, deadline=None)
@given(a=STATES, b=STATES)
def test_merge_with_an_unchanged_side_is_the_other_side(a: dict[str, str], b: dict[str, str]) -> None:
    assert values(merge(to_jar(a, {}), to_jar(a, {}), to_jar(b, {}))) == b
    assert values(merge(to_jar(a, {}), to_jar(b, {}), to_jar(a, {}))) == b
