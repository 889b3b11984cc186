"""Queries over `blob` rows: lookups by hash, hash ranges, pages by id, ref-count repair."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import func, select, update
from sqlalchemy.orm import Session

from archive_pipelines.catalog.models import Blob
from archive_pipelines.catalog.row_sets import TEXT, row_set


@dataclass(frozen=True)
class BlobRow:
    id: int
    sha256: str
    size: int
    ref_count: int


def blobs_by_sha256(session: Session, hashes: Sequence[str]) -> dict[str, BlobRow]:
    src = row_set(session, [("sha", TEXT)], [(h,) for h in dict.fromkeys(hashes)])
    query = (select(Blob.id, Blob.sha256, Blob.size, Blob.ref_count)
             .where(Blob.sha256.in_(select(src.c.sha))))
    # Core rows: no ORM loading machinery per row.
    return {sha: BlobRow(int(bid), str(sha), int(size), int(refs))
            for bid, sha, size, refs in session.connection().execute(query)}


def known_hashes(session: Session, hashes: Sequence[str]) -> set[str]:
    """Which of these hashes have a blob row (one bounded `IN` list: a folder's files)."""
    return set(session.scalars(select(Blob.sha256).where(Blob.sha256.in_(list(hashes)))))


def hashes_in_range(session: Session, low: str, high: str | None) -> set[str]:
    """The hash of every blob row in [low, high) (`blobstore.hash_prefixes.prefix_range`): one
    range of the sha256 index."""
    query = select(Blob.sha256).where(Blob.sha256 >= low)
    if high is not None:
        query = query.where(Blob.sha256 < high)
    return set(session.scalars(query))


def referenced_hashes(session: Session, *, low: str, high: str | None, after: str,
                      limit: int) -> list[str]:
    """Up to `limit` hashes of referenced blobs in [low, high) after `after`, in order."""
    query = select(Blob.sha256).where(Blob.ref_count > 0, Blob.sha256 >= low,
                                      Blob.sha256 > after)
    if high is not None:
        query = query.where(Blob.sha256 < high)
    return list(session.scalars(query.order_by(Blob.sha256).limit(limit)))


def blob_page(session: Session, *, after: int, limit: int) -> list[BlobRow]:
    """Up to `limit` blobs with an id above `after`, in id order (keyset pagination)."""
    rows = session.execute(select(Blob.id, Blob.sha256, Blob.size, Blob.ref_count)
                           .where(Blob.id > after).order_by(Blob.id).limit(limit)).all()
    return [BlobRow(int(i), str(sha), int(size), int(refs)) for i, sha, size, refs in rows]


def count_unreferenced(session: Session) -> int:
    """Blobs with ref_count 0 (gc's to collect once past the grace)."""
    return int(session.scalar(
        select(func.count()).select_from(Blob).where(Blob.ref_count == 0)) or 0)


def ref_count(session: Session, blob_id: int) -> int | None:
    """The blob's stored ref_count (None: no such blob)."""
    return session.scalar(select(Blob.ref_count).where(Blob.id == blob_id))


def set_ref_count(session: Session, blob_id: int, references: int, now: datetime) -> None:
    """Overwrite a drifted ref_count with the counted `references` (gc's clock starts `now`
    when that is 0)."""
    session.execute(update(Blob).where(Blob.id == blob_id).values(
        ref_count=references, unreferenced_since=(now if references == 0 else None)))


__all__ = ["BlobRow", "blob_page", "blobs_by_sha256", "count_unreferenced", "hashes_in_range",
           "known_hashes", "ref_count", "referenced_hashes", "set_ref_count"]
