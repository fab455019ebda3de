"""Signed file links in a cluster (spec §26.4): a link one node signs is valid on every node sharing the
``CLUSTER_SECRET``, and on no node of another cluster."""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

from openbrowse.api.file_urls import FileUrlSigner

SECRET = "the-same-secret-on-every-node"


def _verified_by(signer: FileUrlSigner, link: str) -> bool:
    query = parse_qs(urlsplit(link).query)
    return signer.verify(
        "sessions", "s-1", "downloads", "report.pdf", query["expires"][0], query["sig"][0], now=1_000.0
    )


def test_a_link_signed_on_one_node_is_valid_on_another_of_the_same_cluster() -> None:
    link = FileUrlSigner.for_cluster(SECRET).sign("sessions", "s-1", "downloads", "report.pdf", now=1_000.0)
    assert _verified_by(FileUrlSigner.for_cluster(SECRET), link)


def test_a_link_from_another_cluster_or_a_single_node_key_is_refused() -> None:
    link = FileUrlSigner.for_cluster(SECRET).sign("sessions", "s-1", "downloads", "report.pdf", now=1_000.0)
    assert not _verified_by(FileUrlSigner.for_cluster("another-cluster-secret-value"), link)
    assert not _verified_by(FileUrlSigner(b"\x00" * 32), link)
