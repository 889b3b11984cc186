"""Catalog URL handling (kept apart so settings need not import SQLAlchemy)."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlsplit, urlunsplit


def normalize_catalog_url(url: str) -> str:
    """Pin PostgreSQL URLs to psycopg2 (SQLAlchemy 2.1 maps `postgresql://` to psycopg 3)."""
    for prefix in ("postgres://", "postgresql://"):
        if url.startswith(prefix):
            return "postgresql+psycopg2://" + url[len(prefix):]
    return url


def redact_url(url: str) -> str:
    """The URL with any password replaced, for messages and metadata."""
    parts = urlsplit(url)
    if parts.password:
        netloc = parts.netloc.replace(f":{parts.password}@", ":***@")
        return urlunsplit(parts._replace(netloc=netloc))
    return url


def sqlite_file(catalog_url: str) -> Path | None:
    """The database file of a SQLite catalog URL; None for other databases or in-memory."""
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    try:
        url = make_url(catalog_url)
    except ArgumentError:
        return None  # not a URL: opening the catalog says so
    if not url.drivername.startswith("sqlite") or url.database in (None, "", ":memory:"):
        return None
    return Path(url.database).expanduser()
