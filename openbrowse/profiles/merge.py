"""The three-way merge of profile jars (spec §9.3). Pure.

``base`` is the copy a run started from, ``ours`` what its browser holds now, ``theirs`` the jar on disk now.
Every cookie and storage entry is an item with a key; for every key in base ∪ ours ∪ theirs:

* ours equals base (both absent included) → theirs (this run did not touch it);
* ours changed and theirs equals base → ours (this run's add, update or delete);
* both changed → ours, except a deletion against an update, where the update wins.

Cookies that have expired are dropped, and so are origins left without entries.
"""

from __future__ import annotations

import json
from typing import Any

from openbrowse.profiles.jar import STORAGE_KINDS, Cookie, Jar, normalise_cookies, origin_name, storage_items

CookieKey = tuple[str, str, str, str]
StorageKey = tuple[str, str, str]


def cookie_key(cookie: Cookie) -> CookieKey:
    """``(name, lower(domain), path or "/", partitionKey)``; a url-only cookie is keyed by its url."""
    domain = cookie.get("domain") or cookie.get("url") or ""
    partition = cookie.get("partitionKey")
    partition_text = "" if partition is None else json.dumps(partition, sort_keys=True)
    return (str(cookie["name"]), str(domain).lower(), str(cookie.get("path") or "/"), partition_text)


def _cookies(jar: Jar) -> dict[CookieKey, Cookie]:
    return {cookie_key(cookie): cookie for cookie in normalise_cookies(jar.get("cookies"))}


def _storage(jar: Jar) -> dict[StorageKey, str]:
    items: dict[StorageKey, str] = {}
    for origin in jar.get("origins") or []:
        if not isinstance(origin, dict) or (name := origin_name(origin)) is None:
            continue
        for kind in STORAGE_KINDS:
            for key, value in storage_items(origin, kind).items():
                items[(name, kind, key)] = value
    return items


def _pick(base: Any, ours: Any, theirs: Any) -> Any:
    if ours == base:
        return theirs
    if theirs == base:
        return ours
    if ours is None and theirs is not None:
        return theirs  # a deletion never wipes another run's fresh update
    return ours


def _merge_items(base: dict[Any, Any], ours: dict[Any, Any], theirs: dict[Any, Any]) -> dict[Any, Any]:
    merged = {}
    for key in base.keys() | ours.keys() | theirs.keys():
        value = _pick(base.get(key), ours.get(key), theirs.get(key))
        if value is not None:
            merged[key] = value
    return merged


def is_expired(cookie: Cookie, now: float) -> bool:
    """A persistent cookie whose ``expires`` (epoch seconds) has passed; session cookies (-1 or absent) never."""
    expires = cookie.get("expires")
    return isinstance(expires, int | float) and not isinstance(expires, bool) and 0 < expires < now


def three_way_merge(base: Jar, ours: Jar, theirs: Jar, *, now: float) -> Jar:
    """Merge ``ours`` into ``theirs`` relative to ``base``; ``now`` (epoch seconds) decides expiry."""
    cookies = _merge_items(_cookies(base), _cookies(ours), _cookies(theirs))
    storage = _merge_items(_storage(base), _storage(ours), _storage(theirs))
    origins: dict[str, dict[str, Any]] = {}
    for (origin, kind, key), value in sorted(storage.items()):
        entry = origins.setdefault(origin, {"origin": origin, "localStorage": [], "sessionStorage": []})
        entry[kind].append({"name": key, "value": value})
    return {
        "cookies": [cookie for key, cookie in sorted(cookies.items()) if not is_expired(cookie, now)],
        "origins": [origins[name] for name in sorted(origins)],
    }
