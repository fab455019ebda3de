"""Storage-state jars (spec §5.4) and their normalisation (spec §9.1).

A jar is the Playwright storage-state shape extended with ``sessionStorage``::

    {"cookies": [CookieParam...], "origins": [{"origin": "...", "localStorage": [...], "sessionStorage": [...]}]}

Everything here is pure: dicts in, dicts out.
"""

from __future__ import annotations

from typing import Any

from openbrowse.errors import MalformedRequest

Jar = dict[str, Any]
Cookie = dict[str, Any]

COOKIE_FIELDS = (
    "name",
    "value",
    "url",
    "domain",
    "path",
    "secure",
    "httpOnly",
    "sameSite",
    "expires",
    "priority",
    "sameParty",
    "sourceScheme",
    "sourcePort",
    "partitionKey",
)
_SAME_SITE = {"strict": "Strict", "lax": "Lax", "none": "None", "no_restriction": "None"}
STORAGE_KINDS = ("localStorage", "sessionStorage")


def empty_jar() -> Jar:
    return {"cookies": [], "origins": []}


def normalise_cookie(raw: object) -> Cookie | None:
    """Reduce a cookie to CDP ``Network.CookieParam`` fields; None when it cannot be a cookie."""
    if not isinstance(raw, dict):
        return None
    cookie = {key: raw[key] for key in COOKIE_FIELDS if key in raw and raw[key] is not None}
    if not isinstance(cookie.get("name"), str) or not cookie["name"] or "value" not in raw or raw["value"] is None:
        return None
    if not cookie.get("domain") and not cookie.get("url"):
        return None
    cookie["value"] = str(cookie["value"])
    same_site = cookie.pop("sameSite", None)
    mapped = _SAME_SITE.get(str(same_site).lower()) if same_site is not None else None
    if mapped is not None and not (mapped == "None" and not cookie.get("secure")):
        cookie["sameSite"] = mapped
    return cookie


def normalise_cookies(raw: object) -> list[Cookie]:
    if not isinstance(raw, list):
        return []
    return [cookie for cookie in (normalise_cookie(item) for item in raw) if cookie is not None]


def normalise_state(raw: object) -> Jar:
    """An imported storage state as a jar: cookies normalised, ``origins`` kept verbatim (non-objects dropped).

    Raises :class:`MalformedRequest` when the payload is not a storage state at all.
    """
    if not isinstance(raw, dict) or not ({"cookies", "origins"} & raw.keys()):
        raise MalformedRequest("The storage state must be an object with 'cookies' and/or 'origins'.")
    cookies = raw.get("cookies", [])
    origins = raw.get("origins", [])
    if not isinstance(cookies, list) or not isinstance(origins, list):
        raise MalformedRequest("The storage state's 'cookies' and 'origins' must be lists.")
    return {"cookies": normalise_cookies(cookies), "origins": [o for o in origins if isinstance(o, dict)]}


def read_jar(raw: object) -> Jar:
    """A jar read from disk, tolerant of damage: anything unusable becomes empty."""
    if not isinstance(raw, dict):
        return empty_jar()
    origins = raw.get("origins")
    return {
        "cookies": normalise_cookies(raw.get("cookies")),
        "origins": [o for o in origins if isinstance(o, dict)] if isinstance(origins, list) else [],
    }


def storage_items(origin: dict[str, Any], kind: str) -> dict[str, str]:
    """One origin's ``localStorage`` or ``sessionStorage`` as name → value (malformed entries skipped)."""
    entries = origin.get(kind)
    items: dict[str, str] = {}
    if not isinstance(entries, list):
        return items
    for entry in entries:
        if isinstance(entry, dict) and isinstance(entry.get("name"), str) and entry.get("value") is not None:
            items[entry["name"]] = str(entry["value"])
    return items


def origin_name(origin: dict[str, Any]) -> str | None:
    name = origin.get("origin")
    return name if isinstance(name, str) and name else None


def cookie_domains(jar: Jar) -> tuple[str, ...]:
    """Sorted distinct cookie domains with leading dots stripped (spec §5.3)."""
    domains = set()
    for cookie in jar.get("cookies", []):
        domain = cookie.get("domain") if isinstance(cookie, dict) else None
        if isinstance(domain, str) and domain.lstrip("."):
            domains.add(domain.lstrip(".").lower())
    return tuple(sorted(domains))


def counts(jar: Jar) -> tuple[int, int]:
    """(cookies, origins) — what a feed event may say about a jar without revealing it."""
    return len(jar.get("cookies", [])), len(jar.get("origins", []))
