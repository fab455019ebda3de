"""Where the store lives: ``DATABASE_URL`` parsed into a backend kind and a SQLAlchemy URL (spec §26.1)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError

from openbrowse.errors import ConfigError

if TYPE_CHECKING:
    from openbrowse.config import Settings

StoreKind = Literal["sqlite", "postgresql"]
_POSTGRES_SCHEMES = ("postgresql", "postgres", "postgresql+asyncpg")
_SQLITE_SCHEMES = ("sqlite", "sqlite+aiosqlite")


@dataclass(frozen=True, slots=True)
class StoreTarget:
    kind: StoreKind
    url: URL
    """The SQLAlchemy URL, with its async driver."""
    sqlite_path: Path | None = None

    @classmethod
    def sqlite(cls, path: Path) -> StoreTarget:
        absolute = path.expanduser().resolve()
        return cls("sqlite", URL.create("sqlite+aiosqlite", database=str(absolute)), absolute)

    @classmethod
    def parse(cls, text: str) -> StoreTarget:
        """``sqlite:///path`` or ``postgresql://user:pass@host:port/db``; ConfigError with one sentence otherwise."""
        try:
            url = make_url(text)
        except ArgumentError:
            raise ConfigError(
                "DATABASE_URL must look like postgresql://user:password@host:port/database or sqlite:///path"
            ) from None
        if url.drivername in _SQLITE_SCHEMES:
            if not url.database or url.database == ":memory:":
                raise ConfigError("A sqlite:/// URL must name a database file, as in sqlite:////srv/openbrowse/db")
            return cls.sqlite(Path(url.database))
        if url.drivername in _POSTGRES_SCHEMES:
            if not url.database:
                raise ConfigError("DATABASE_URL must name the database, as in postgresql://user@host:5432/openbrowse")
            return cls("postgresql", url.set(drivername="postgresql+asyncpg"))
        raise ConfigError(f"DATABASE_URL's scheme {url.drivername!r} is neither postgresql:// nor sqlite:///")

    @classmethod
    def of(cls, database_url: str | None, default_path: Path) -> StoreTarget:
        return cls.parse(database_url) if database_url else cls.sqlite(default_path)

    def describe(self) -> str:
        """The target without its password, for logs and error messages."""
        if self.kind == "sqlite":
            return f"SQLite at {self.sqlite_path}"
        return f"PostgreSQL at {self.url.host or 'localhost'}:{self.url.port or 5432}/{self.url.database}"


def store_target(settings: Settings) -> StoreTarget:
    """``DATABASE_URL``, or SQLite at ``data/browser_use.db``."""
    return StoreTarget.of(settings.DATABASE_URL, settings.db_path)
