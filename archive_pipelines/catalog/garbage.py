"""Garbage collection's statements: unreferenced blobs past the grace, a row for an
untracked blob file, and the claim that must precede removing a blob's primary file.

The order of the transactions that use them is gc's crash-safety protocol
(`storage.gc._collect_one`); each function here is one step inside the caller's
transaction, never a transaction of its own.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import and_, exists, select, update
from sqlalchemy.orm import Session

from archive_pipelines.catalog.models import Blob, BlobCopy, utcnow
from archive_pipelines.catalog.statements import insert_ignore


def unreferenced_page(session: Session, *, store_id: int, cutoff: datetime, after: int,
                      limit: int) -> list[tuple[int, str]]:
    """(blob id, sha256) of up to `limit` blobs after `after` (id order) with ref_count 0
    since before `cutoff` and present on the store."""
    present = exists().where(and_(BlobCopy.blob_id == Blob.id,
                                  BlobCopy.store_id == store_id,
                                  BlobCopy.status == "present"))
    rows = session.execute(
        select(Blob.id, Blob.sha256)
        .where(Blob.id > after, Blob.ref_count == 0,
               Blob.unreferenced_since < cutoff, present)
        .order_by(Blob.id).limit(limit)).all()
    return [(int(blob_id), str(sha)) for blob_id, sha in rows]


def track_blob(session: Session, *, sha256: str, size: int, since: datetime,
               store_id: int) -> int | None:
    """A row for a blob file the catalog does not know: ref_count 0 since `since`, present
    on the store. Its id, or None when a row exists already (an ingest recorded the file)."""
    blob_id = session.scalar(
        insert_ignore(session)(Blob).values(sha256=sha256, size=size, ref_count=0,
                                    created_at=utcnow(), unreferenced_since=since)
        .on_conflict_do_nothing(index_elements=["sha256"]).returning(Blob.id))
    if blob_id is None:
        return None
    session.add(BlobCopy(blob_id=blob_id, store_id=store_id, status="present",
                         mtime=utcnow()))
    return int(blob_id)


def claim_unreferenced(session: Session, *, blob_id: int, store_id: int) -> bool:
    """Claim an unreferenced blob for removal: lock its row, and mark its copy on the store
    `missing`. False (nothing changed) when it is referenced or not present there.

    The row lock makes an ingest adding a reference wait for this claim (it then sees the
    copy `missing` and rewrites the file), or this claim wait for the ingest (and see
    ref_count > 0). On SQLite write transactions are serialized anyway.
    """
    unreferenced = session.scalar(select(Blob.id).where(
        Blob.id == blob_id, Blob.ref_count == 0).with_for_update())
    if unreferenced is None:
        return False
    result = session.execute(
        update(BlobCopy).where(
            BlobCopy.blob_id == blob_id, BlobCopy.store_id == store_id,
            BlobCopy.status == "present",
        ).values(status="missing", mtime=utcnow())
        .execution_options(synchronize_session=False))
    return bool(int(getattr(result, "rowcount", 0)))


__all__ = ["claim_unreferenced", "track_blob", "unreferenced_page"]
