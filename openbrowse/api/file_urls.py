"""Signed file URLs (spec §22.3): a link to one file of a session or browser, good for 15 minutes.

The signature is an HMAC-SHA256 over the file's path and the expiry, keyed with a server secret that lives in the
data directory (mode 0600) and never enters a sandbox. A URL names one file: changing the owner, the area, the name
or the expiry breaks the signature.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
import time
from pathlib import Path
from typing import Literal
from urllib.parse import quote, urlencode

from openbrowse.domain.ascii_numbers import ascii_int

__all__ = ["FILE_AREAS", "FILE_URL_TTL_S", "FileArea", "FileUrlSigner", "OwnerKind"]

OwnerKind = Literal["sessions", "browsers"]
FileArea = Literal["downloads", "recordings", "screenshots", "uploads", "traces"]
FILE_AREAS: tuple[FileArea, ...] = ("downloads", "recordings", "screenshots", "uploads", "traces")
FILE_URL_TTL_S = 15 * 60
_KEY_BYTES = 32


class FileUrlSigner:
    """Issues and checks ``?expires=&sig=`` for ``/v3/{kind}/{id}/files/{area}/{name}``."""

    def __init__(self, key: bytes, *, ttl_s: int = FILE_URL_TTL_S) -> None:
        if len(key) < 16:
            raise ValueError("a file URL key needs at least 16 bytes")
        self._key = key
        self._ttl_s = ttl_s

    @classmethod
    def from_key_file(cls, path: Path, *, ttl_s: int = FILE_URL_TTL_S) -> FileUrlSigner:
        """Load the key kept at ``path``, creating it (mode 0600) on first use."""
        try:
            key = path.read_bytes()
        except FileNotFoundError:
            path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            key = secrets.token_bytes(_KEY_BYTES)
            try:
                descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            except FileExistsError:  # another process made it first: use theirs
                key = path.read_bytes()
            else:
                with os.fdopen(descriptor, "wb") as handle:
                    handle.write(key)
        return cls(key, ttl_s=ttl_s)

    @classmethod
    def for_cluster(cls, cluster_secret: str, *, ttl_s: int = FILE_URL_TTL_S) -> FileUrlSigner:
        """The key every node of a cluster derives from ``CLUSTER_SECRET``, so a link signed by one node is valid
        on all of them (spec §26.4)."""
        key = hmac.new(cluster_secret.encode("utf-8"), b"openbrowse file urls", hashlib.sha256).digest()
        return cls(key, ttl_s=ttl_s)

    @staticmethod
    def path_of(kind: OwnerKind, owner_id: str, area: FileArea, name: str) -> str:
        return f"/v3/{kind}/{quote(owner_id, safe='')}/files/{area}/{quote(name, safe='')}"

    def sign(self, kind: OwnerKind, owner_id: str, area: FileArea, name: str, *, now: float | None = None) -> str:
        """The path and query of a signed URL (join it to the server's base URL)."""
        expires = int((time.time() if now is None else now) + self._ttl_s)
        path = self.path_of(kind, owner_id, area, name)
        return f"{path}?{urlencode({'expires': expires, 'sig': self._digest(path, expires)})}"

    def url(self, base_url: str, kind: OwnerKind, owner_id: str, area: FileArea, name: str) -> str:
        return base_url.rstrip("/") + self.sign(kind, owner_id, area, name)

    def verify(
        self,
        kind: OwnerKind,
        owner_id: str,
        area: FileArea,
        name: str,
        expires: str | None,
        sig: str | None,
        *,
        now: float | None = None,
    ) -> bool:
        """True when ``sig`` was issued by us for this very file and ``expires`` has not passed. An ``expires`` that is
        not a number in ASCII digits is a :class:`MalformedRequest` (400): no URL this server issued has one."""
        if not expires or not sig:
            return False
        deadline = ascii_int(expires, what="The link's expires")
        if deadline < (time.time() if now is None else now):
            return False
        expected = self._digest(self.path_of(kind, owner_id, area, name), deadline)
        return hmac.compare_digest(expected, sig)

    def sign_path(self, path: str, *, ttl_s: int | None = None, now: float | None = None) -> str:
        """``path`` (already quoted, with no query) signed for ``ttl_s`` (default: this signer's): the path and query
        of a link to any resource that takes these signatures (workspace files, spec §27.1)."""
        expires = int((time.time() if now is None else now) + (self._ttl_s if ttl_s is None else ttl_s))
        return f"{path}?{urlencode({'expires': expires, 'sig': self._digest(path, expires)})}"

    def verify_path(self, path: str, expires: str | None, sig: str | None, *, now: float | None = None) -> bool:
        """:meth:`verify` for a link made by :meth:`sign_path`."""
        if not expires or not sig:
            return False
        deadline = ascii_int(expires, what="The link's expires")
        if deadline < (time.time() if now is None else now):
            return False
        return hmac.compare_digest(self._digest(path, deadline), sig)

    def _digest(self, path: str, expires: int) -> str:
        return hmac.new(self._key, f"{path}\n{expires}".encode(), hashlib.sha256).hexdigest()
