"""Garbage collection: remove blobs unreferenced for longer than the grace period, and
legacy folders the migration moved to `migrated/` longer ago than that (`storage.retired`).

Only the primary store is touched; replicas are append-only (seed 004). The blob row
stays (ref_count 0, primary copy `missing`) so a later ingest of the same bytes revives it.
Safe against a concurrent ingest re-referencing a blob: the file is first moved to a
trash name, the reference count re-checked in a transaction, and only then unlinked.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path

from sqlalchemy import and_, exists, select, update

from archive_pipelines.catalog.models import Blob, BlobCopy, utcnow
from archive_pipelines.storage.context import Storage
from archive_pipelines.storage.retired import remove_retired

TRASH = ".gc-trash"


@dataclass
class GcReport:
    candidates: int = 0
    removed: int = 0
    bytes_freed: int = 0
    revived: int = 0
    untracked_removed: int = 0
    migrated_folders_removed: int = 0  # legacy folders the migration moved aside
    errors: list[str] = field(default_factory=list)


def collect_garbage(storage: Storage, *, grace_hours: float | None = None,
                    dry_run: bool = False, untracked: bool = False,
                    batch: int = 500) -> GcReport:
    grace = storage.settings.storage.gc_grace_hours if grace_hours is None else grace_hours
    cutoff = utcnow() - timedelta(hours=grace)
    report = GcReport()
    store_id = storage.primary_store_id
    trash = storage.primary_root / TRASH
    last = 0
    while True:
        with storage.read_session() as session:
            present = exists().where(and_(BlobCopy.blob_id == Blob.id,
                                          BlobCopy.store_id == store_id,
                                          BlobCopy.status == "present"))
            rows = session.execute(
                select(Blob.id, Blob.sha256, Blob.size)
                .where(Blob.id > last, Blob.ref_count == 0,
                       Blob.unreferenced_since < cutoff, present)
                .order_by(Blob.id).limit(batch)).all()
        if not rows:
            break
        last = rows[-1][0]
        report.candidates += len(rows)
        if dry_run:
            report.bytes_freed += sum(int(r[2]) for r in rows)
            continue
        trash.mkdir(exist_ok=True)
        for blob_id, sha, size in rows:
            _collect_one(storage, int(blob_id), str(sha), int(size), trash, report)
    if untracked and not dry_run:
        _remove_untracked(storage, grace, report)
    retired = remove_retired(storage.layout.migrated, grace_hours=grace, dry_run=dry_run)
    report.migrated_folders_removed = retired.folders
    report.errors += retired.errors
    return report


def _collect_one(storage: Storage, blob_id: int, sha: str, size: int, trash: Path,
                 report: GcReport) -> None:
    store_id = storage.primary_store_id
    with storage.session() as session:
        result = session.execute(
            update(BlobCopy).where(
                BlobCopy.blob_id == blob_id, BlobCopy.store_id == store_id,
                BlobCopy.status == "present",
                exists().where(and_(Blob.id == blob_id, Blob.ref_count == 0)),
            ).values(status="missing", mtime=utcnow())
            .execution_options(synchronize_session=False))
        claimed = int(getattr(result, "rowcount", 0))
    if not claimed:
        return
    final = storage.primary.local_path(sha)
    if final is None:
        return
    parked: Path | None = trash / f"{sha}.{os.getpid()}"
    try:
        os.replace(final, parked)  # type: ignore[arg-type]
    except FileNotFoundError:
        parked = None  # already gone: the catalog now says so
    storage.farm.remove_alias(sha)  # the views' hard link would keep the bytes alive
    with storage.session() as session:
        refs = session.scalar(select(Blob.ref_count).where(Blob.id == blob_id))
        if refs:
            # Re-referenced meanwhile: put the file back (an ingest may already have).
            session.execute(update(BlobCopy).where(
                BlobCopy.blob_id == blob_id, BlobCopy.store_id == store_id,
            ).values(status="present", mtime=utcnow()))
            if parked is not None:
                if final.exists():
                    parked.unlink()
                else:
                    os.replace(parked, final)
            if final.exists():
                storage.farm.ensure_alias(sha, final)
            report.revived += 1
            return
    if parked is not None:
        parked.unlink()
        report.removed += 1
        report.bytes_freed += size


def _remove_untracked(storage: Storage, grace_hours: float, report: GcReport) -> None:
    """Blob files with no catalog row (left by an interrupted ingest), older than the grace.

    Opt-in only: the crawler stores page bodies in the primary store and records them in
    its page-index segments, not (yet) as catalog rows, so they look untracked here.

    Age is the inode change time: a hardlinked blob keeps its source's old mtime.
    """
    horizon = time.time() - grace_hours * 3600
    for prefix_int in range(256):
        prefix = f"{prefix_int:02x}"
        upper = f"{prefix_int + 1:02x}" if prefix_int < 255 else "g"
        with storage.read_session() as session:
            known = set(session.scalars(select(Blob.sha256).where(
                Blob.sha256 >= prefix, Blob.sha256 < upper)))
        for sha in storage.primary.iter_hashes(prefix):
            if sha in known:
                continue
            path = storage.primary.local_path(sha)
            if path is None:
                continue
            try:
                if os.lstat(path).st_ctime < horizon:
                    path.unlink()
                    report.untracked_removed += 1
            except FileNotFoundError:
                continue
