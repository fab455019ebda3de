"""Refs: the handles a snapshot gives to elements, and how a caller may spell them (spec §20.2).

Three families (seed): ``12`` / ``e12`` from an ai snapshot (Playwright's ``aria-ref``), ``e12`` from a role
snapshot (role + name + ``nth``), ``ax12`` from an aria snapshot (a backend DOM node). Callers may prefix a ref
with ``@`` or ``ref=`` (the reference client's tool passes what the model copied from the snapshot text).
"""

from __future__ import annotations

import re

__all__ = ["AX_REF", "REF_MARKER_ATTRIBUTE", "ROLE_REF", "normalize_ref"]

REF_MARKER_ATTRIBUTE = "data-openbrowse-ref"
"""Set on the DOM node of an ``axN`` ref when an action needs it, so a Playwright locator can find the node."""

ROLE_REF = re.compile(r"^e\d+$")
AX_REF = re.compile(r"^ax\d+$")


def normalize_ref(ref: object) -> str:
    """``"@e12"``, ``"ref=e12"``, ``"[ref=e12]"``, ``" e12 "`` → ``"e12"``; numbers become their digits."""
    if isinstance(ref, bool) or ref is None:
        return ""
    if isinstance(ref, int):
        return str(ref)
    text = str(ref).strip()
    if text.startswith("[") and text.endswith("]"):
        text = text[1:-1].strip()
    if text.startswith("@"):
        text = text[1:]
    if text.startswith("ref="):
        text = text[4:]
    return text.strip()
