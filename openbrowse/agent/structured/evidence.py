"""The evidence corpus (spec §13.4): the text of pages read this session, and the links found on them.

Page readers feed it with :meth:`EvidenceCorpus.add_page` (one URL, its text). Until ``read_pages`` exists, the
runner feeds it from what the agent reads today: the content returned by ``extract``, ``evaluate``,
``search_page``, ``get_html``, ``read_file``… (a result shaped like ``pages.json`` — ``{url, text}`` objects —
joins under each page's own URL, anything else under the URL of the page the agent was on). It also loads the
session's cumulative ``pages.json`` and reads ``found_links.json`` (``[{index, text, href, offhost?}]``) for the
completeness gate's link deficit.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

_SPACE = re.compile(r"\s+")
PAGES_FILE = "pages.json"
FOUND_LINKS_FILE = "found_links.json"


def _normal(text: str) -> str:
    return _SPACE.sub(" ", text).strip().lower()


def canonical_url(url: str) -> str:
    """URLs compared without fragment and trailing slash."""
    return url.split("#", 1)[0].rstrip("/")


class EvidenceCorpus:
    def __init__(self, files_dir: Path | None = None) -> None:
        self._files_dir = files_dir
        self._pages: dict[str, str] = {}
        self._visited: set[str] = set()
        self._failed: set[str] = set()
        self._pages_file_mtime: float | None = None
        self.reads = 0
        """Grows with every page text added: lets guards ask "was anything read since …?"."""

    # -- feeding ---------------------------------------------------------------------------------------------
    def add_page(self, url: str | None, text: str) -> None:
        key = canonical_url(url) if url else ""
        normal = _normal(text)
        if not normal:
            return
        previous = self._pages.get(key, "")
        if normal in previous:
            return
        self._pages[key] = f"{previous}\n{normal}" if previous else normal
        if key:
            self._visited.add(key)
        self.reads += 1

    def mark_visited(self, url: str | None) -> None:
        if url and url.startswith(("http://", "https://")):
            self._visited.add(canonical_url(url))

    def mark_failed(self, url: str) -> None:
        """A page a reader could not load: it counts as attempted for the gate, never as evidence."""
        self._failed.add(canonical_url(url))

    def ingest(self, content: str, current_url: str | None) -> None:
        """A tool result the agent saw: page-shaped JSON joins per page, other text under ``current_url``."""
        pages = _page_records(content)
        if pages:
            for url, text in pages:
                self.add_page(url, text)
        else:
            self.add_page(current_url, content)

    def refresh(self) -> None:
        """Load the session's cumulative ``pages.json`` (written by ``read_pages``) when it changed."""
        if self._files_dir is None:
            return
        path = self._files_dir / PAGES_FILE
        try:
            mtime = path.stat().st_mtime
        except OSError:
            return
        if mtime == self._pages_file_mtime:
            return
        self._pages_file_mtime = mtime
        try:
            content = path.read_text("utf-8")
        except OSError:
            return
        for url, text in _page_records(content):
            self.add_page(url, text)

    # -- asking ----------------------------------------------------------------------------------------------
    def mentions(self, value: str) -> bool:
        needle = _normal(value)
        if not needle:
            return True
        self.refresh()
        return any(needle in text for text in self._pages.values())

    def was_read(self, url: str) -> bool:
        self.refresh()
        key = canonical_url(url)
        return key in self._pages or key in self._visited

    def was_attempted(self, url: str) -> bool:
        return self.was_read(url) or canonical_url(url) in self._failed

    def found_links(self) -> list[str]:
        """On-site links kept by the last ``find_links`` (off-host ones left out)."""
        if self._files_dir is None:
            return []
        try:
            records = json.loads((self._files_dir / FOUND_LINKS_FILE).read_text("utf-8"))
        except (OSError, ValueError):
            return []
        if not isinstance(records, list):
            return []
        links = [
            str(r["href"])
            for r in records
            if isinstance(r, dict) and isinstance(r.get("href"), str) and not r.get("offhost")
        ]
        return list(dict.fromkeys(links))


def _page_records(content: str) -> list[tuple[str, str]]:
    try:
        value: Any = json.loads(content)
    except ValueError:
        return []
    if isinstance(value, dict):
        value = value.get("pages", value.get("data", [value]))
    if not isinstance(value, list):
        return []
    records: list[tuple[str, str]] = []
    for entry in value:
        if isinstance(entry, dict) and isinstance(entry.get("url"), str):
            parts = [entry.get("title"), entry.get("text")]
            jsonld = entry.get("jsonld")
            if jsonld:
                parts.append(json.dumps(jsonld, ensure_ascii=False))
            text = "\n".join(str(p) for p in parts if p)
            if text:
                records.append((entry["url"], text))
    return records
