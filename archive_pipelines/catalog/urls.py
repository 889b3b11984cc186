"""Catalog URL handling (kept apart so settings need not import SQLAlchemy)."""

from __future__ import annotations

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
