"""What a network refusal is: the stable rule names, the typed error, and the event a refusal produces."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, TypeAlias

from openbrowse.errors import OpenBrowseError

Rule: TypeAlias = Literal[
    "invalid_target",  # not an http(s) URL or host:port we can read
    "unresolvable",  # the name did not resolve
    "metadata",  # a cloud metadata host or address
    "link_local",  # 169.254.0.0/16, fe80::/10
    "service_port",  # this service's own listening port on a local address
    "slot_endpoint",  # a display slot's CDP, VNC or websockify port on a local address
    "public_only",  # a non-public address under NETWORK_POLICY=public-only
]
"""Stable machine names of the rules, sent as ``X-OpenBrowse-Refused`` and recorded in the feed."""

ALWAYS_REFUSED: frozenset[Rule] = frozenset({"metadata", "link_local", "service_port", "slot_endpoint"})


class NetworkRefused(OpenBrowseError):
    """The network policy refused a destination; the message says which host and which rule, in one sentence."""

    code = "network_refused"

    def __init__(
        self,
        message: str,
        *,
        rule: Rule = "invalid_target",
        host: str = "",
        port: int | None = None,
        reason: str | None = None,
    ) -> None:
        super().__init__(message)
        self.rule: Rule = rule
        self.host = host
        self.port = port
        self.reason = reason or message
        """The sentence without the "Refused by the network policy:" lead-in (for block pages and the feed)."""

    def as_refusal(self) -> Refusal:
        return Refusal(self.host, self.port, self.rule, self.reason)


@dataclass(frozen=True, slots=True)
class Refusal:
    """One refused destination, as the session's feed records it (host and rule, never a body)."""

    host: str
    port: int | None
    rule: Rule
    reason: str
