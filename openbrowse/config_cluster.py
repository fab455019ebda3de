"""The settings of the store and of a node in a cluster (spec §26.1, §26.2), a base of :class:`Settings`."""

from __future__ import annotations

import socket

from pydantic import Field, model_validator
from pydantic_settings import BaseSettings

DEFAULT_NODE_LEASE_S = 15


class ClusterSettings(BaseSettings):
    """Where durable state lives and how this process is known to the other nodes sharing it."""

    DATABASE_URL: str | None = None
    """``postgresql://user:password@host:port/db`` puts everything durable in PostgreSQL 13+; unset, SQLite at
    ``data/browser_use.db`` (spec §26.1)."""
    DATABASE_POOL_SIZE: int = Field(default=10, ge=1, le=200)
    """PostgreSQL connections one server process holds at most (SQLite: one writer and one reader, always)."""

    NODE_ID: str | None = Field(default=None, min_length=1, max_length=120, pattern=r"^[A-Za-z0-9._:-]+$")
    """This node's name in the cluster; default: the host name and port, stable across restarts."""
    NODE_URL: str | None = Field(default=None, pattern=r"^https?://[^/\s]+/?$")
    """How the other nodes reach this one (scheme, host and port); default ``http://HOST:PORT``."""
    NODE_LEASE_S: int = Field(default=DEFAULT_NODE_LEASE_S, ge=3, le=3600)
    """A node not seen for this long is dead; nodes heartbeat every third of it."""
    CLUSTER_SECRET: str | None = Field(default=None, min_length=16)
    """What nodes show each other; required when ``DATABASE_URL`` is PostgreSQL (spec §26.2)."""

    @model_validator(mode="after")
    def _cluster_secret_on_postgresql(self) -> ClusterSettings:
        if self.DATABASE_URL and self.DATABASE_URL.startswith("postgres") and not self.CLUSTER_SECRET:
            raise ValueError(
                "DATABASE_URL is PostgreSQL, which other nodes may share, so CLUSTER_SECRET must be set "
                "(at least 16 characters, the same on every node)"
            )
        return self


def node_identity(node_id: str | None, node_url: str | None, host: str, port: int) -> tuple[str, str]:
    """This node's id and URL: the configured ones, else the host name and port, and ``http://HOST:PORT``."""
    url_host = "127.0.0.1" if host in ("", "0.0.0.0", "::") else (f"[{host}]" if ":" in host else host)
    return (
        node_id or f"{socket.gethostname()}:{port}",
        (node_url or f"http://{url_host}:{port}").rstrip("/"),
    )
