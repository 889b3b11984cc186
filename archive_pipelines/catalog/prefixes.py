"""What a short prefix names: the body hashes and crawl session ids that start with it, so a
person can type the first digits of either (as with git's short hashes)."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from archive_pipelines.catalog.models import CrawlSession, PageFetch


def _upper_bound(prefix: str) -> str:
    # Every id and hash is ASCII: this sorts after every string that starts with `prefix`.
    return prefix + "\x7f"


def body_hashes_with_prefix(session: Session, prefix: str, *, limit: int) -> list[str]:
    """Up to `limit` distinct capture body sha256s starting with `prefix`, in order (a range
    on the body index)."""
    rows = session.scalars(
        select(PageFetch.body_sha256).distinct()
        .where(PageFetch.body_sha256 >= prefix, PageFetch.body_sha256 < _upper_bound(prefix))
        .order_by(PageFetch.body_sha256).limit(limit))
    return [str(sha) for sha in rows]


def session_ids_with_prefix(session: Session, prefix: str, *, limit: int) -> list[str]:
    """Up to `limit` crawl session ids starting with `prefix`, in order."""
    rows = session.scalars(
        select(CrawlSession.id)
        .where(CrawlSession.id >= prefix, CrawlSession.id < _upper_bound(prefix))
        .order_by(CrawlSession.id).limit(limit))
    return [str(sid) for sid in rows]


__all__ = ["body_hashes_with_prefix", "session_ids_with_prefix"]
