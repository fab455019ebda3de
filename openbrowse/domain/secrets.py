"""``sensitiveData`` (spec §25.3): secrets scoped to the origins where they may be typed.

The documented form is Browser Use's domain-scoped one, ``{"https://*.example.com": {"pw": "…"}}``. A pattern is
a scheme (``http``, ``https``, or ``*`` / ``http*`` for both; none means ``https``, as in browser-use), a host
(``example.com``) or host glob (``*.example.com``, which also matches ``example.com`` itself, as in browser-use),
and an optional port. The flat form ``{"pw": "…"}`` is still accepted and bound, when it is received, to the
origin of the first URL in the task it comes with; without such a URL it is refused, so a secret never waits
for whatever page the agent happens to reach first (a redirect or a page's link could pick that page).
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from urllib.parse import urlsplit

from openbrowse.errors import InvalidRequest

ScopedSecrets = dict[str, dict[str, str]]
"""Pattern → placeholder name → value; the only form stored and handed to the agent."""

MAX_SECRETS = 50
MAX_VALUE_CHARS = 4096
MAX_PATTERN_CHARS = 300
_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")
_HOST_GLOB = re.compile(r"^(\*\.)?[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*$|^\[[0-9a-f:.]+\]$")
_PATTERN = re.compile(r"^((?P<scheme>https?|http\*|\*)://)?(?P<host>[^/:]+|\[[^\]]+\])(:(?P<port>\d{1,5}))?/?$")
_URL = re.compile(r"https?://[^\s<>\"']+")
_TRAILING = ".,;)"


@dataclass(frozen=True, slots=True)
class OriginPattern:
    scheme: str
    host: str
    port: int | None

    def matches(self, url: str) -> bool:
        """True when ``url``'s origin is one this pattern names (never for ``about:``, ``data:``, ``file:`` …)."""
        try:
            parts = urlsplit(url)
            port = parts.port
        except ValueError:
            return False
        scheme = parts.scheme.lower()
        host = (parts.hostname or "").lower().rstrip(".")
        if scheme not in {"http", "https"} or not host:
            return False
        if self.scheme != "*" and scheme != self.scheme:
            return False
        if self.port is not None and (port or (443 if scheme == "https" else 80)) != self.port:
            return False
        if ":" in host:
            host = f"[{host}]"
        if self.host.startswith("*."):
            return host == self.host[2:] or fnmatch.fnmatchcase(host, self.host)
        return host == self.host


def parse_pattern(pattern: str) -> OriginPattern:
    """``scheme://host-glob[:port]``; raises :class:`InvalidRequest` with one sentence for anything else."""
    match = _PATTERN.match(pattern.strip().lower()) if len(pattern) <= MAX_PATTERN_CHARS else None
    host = match.group("host").rstrip(".") if match else ""
    if match is None or not _HOST_GLOB.match(host):
        raise InvalidRequest(
            f"sensitiveData pattern '{pattern[:100]}' is not valid: use a scheme and host such as "
            "'https://example.com' or 'https://*.example.com'."
        )
    port = int(match.group("port")) if match.group("port") else None
    if port is not None and not 0 < port < 65536:
        raise InvalidRequest(f"sensitiveData pattern '{pattern[:100]}' has an invalid port.")
    scheme = match.group("scheme") or "https"  # as browser-use: no scheme means https only
    return OriginPattern("*" if scheme == "http*" else scheme, host, port)


def start_url_of(task: str | None) -> str | None:
    """The first http(s) URL in the task, trailing ``.,;)`` stripped (the task's start URL, spec §11.5)."""
    match = _URL.search(task or "")
    return match.group(0).rstrip(_TRAILING) if match else None


def origin_of(url: str) -> str | None:
    """``scheme://host[:port]`` of an http(s) URL, lower-cased; None for anything else."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return None
    if parts.scheme.lower() not in {"http", "https"} or not parts.hostname:
        return None
    host = parts.hostname.lower()
    host = f"[{host}]" if ":" in host else host
    return f"{parts.scheme.lower()}://{host}" + (f":{port}" if port is not None else "")


def _check_entry(name: object, value: object) -> tuple[str, str]:
    if not isinstance(name, str) or not _NAME.match(name):
        raise InvalidRequest(
            "sensitiveData names must be 1-64 letters, digits, '_', '.' or '-' (they become <secret>name</secret>)."
        )
    if not isinstance(value, str) or not value:
        raise InvalidRequest(f"sensitiveData value of '{name}' must be a non-empty string.")
    if len(value) > MAX_VALUE_CHARS:
        raise InvalidRequest(f"sensitiveData value of '{name}' is longer than {MAX_VALUE_CHARS} characters.")
    return name, value


def scope_secrets(raw: Mapping[str, object], task: str | None) -> ScopedSecrets:
    """Validate a request's ``sensitiveData`` and return it domain-scoped (raises :class:`InvalidRequest`).

    Flat entries are bound to the origin of the task's start URL; mixing both forms is allowed.
    """
    scoped: ScopedSecrets = {}
    flat: dict[str, str] = {}
    for key, content in raw.items():
        if isinstance(content, Mapping):
            parse_pattern(key)
            entries = dict(_check_entry(name, value) for name, value in content.items())
            if entries:
                scoped.setdefault(key.strip().lower().rstrip("/"), {}).update(entries)
        else:
            name, value = _check_entry(key, content)
            flat[name] = value
    if flat:
        start = start_url_of(task)
        origin = origin_of(start) if start else None
        if origin is None:
            raise InvalidRequest(
                "Flat sensitiveData needs a task that starts from a URL; otherwise scope each secret to its site, "
                'as in {"https://example.com": {"name": "value"}}.'
            )
        scoped.setdefault(origin, {}).update(flat)
    if sum(len(entries) for entries in scoped.values()) > MAX_SECRETS:
        raise InvalidRequest(f"sensitiveData holds more than {MAX_SECRETS} secrets.")
    return scoped


def secrets_for_url(secrets: Mapping[str, Mapping[str, str]] | None, url: str | None) -> dict[str, str]:
    """The secrets whose pattern matches ``url``'s origin (none for a missing or non-http(s) URL)."""
    if not secrets or not url:
        return {}
    found: dict[str, str] = {}
    for pattern, entries in secrets.items():
        try:
            origin = parse_pattern(pattern)
        except InvalidRequest:
            continue
        if origin.matches(url):
            found.update(entries)
    return found


def secret_values(secrets: Mapping[str, Mapping[str, str]] | None) -> Mapping[str, str]:
    """Every value with its placeholder name, across patterns (what the redactor hides)."""
    values: dict[str, str] = {}
    for entries in (secrets or {}).values():
        for name, value in entries.items():
            values.setdefault(value, name)
    return MappingProxyType(values)


def normalize_stored(raw: object, task: str | None) -> ScopedSecrets | None:
    """A stored ``sensitive_data`` column: domain-scoped as written now; a legacy flat map is scoped as a request
    would be, or dropped (None) when its task names no URL."""
    if not isinstance(raw, Mapping) or not raw:
        return None
    try:
        return scope_secrets(raw, task) or None
    except InvalidRequest:
        return None
