"""One snapshot as a person asks for it: by its id (ArchiveBox's, for an adopted one) or
its timestamp, with its tags, results and files summed up."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import datetime

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from archive_pipelines.catalog.models import (
    ArchiveResult,
    Blob,
    Snapshot,
    SnapshotEntry,
    SnapshotFile,
    SnapshotTag,
    Tag,
)


@dataclass(frozen=True)
class ResultDetails:
    extractor: str
    status: str
    output: str | None
    start_ts: datetime | None
    end_ts: datetime | None
    archivebox_id: str | None
    archivebox_uuid: str | None


@dataclass(frozen=True)
class SnapshotDetails:
    id: str
    url: str
    timestamp: str
    title: str | None
    added: datetime  # created_at: ArchiveBox's `added` for an adopted snapshot
    updated: datetime | None  # ArchiveBox's `updated`, when it had one
    fs_version: str
    created_by: str
    crawl_id: str | None
    tags: list[str] = field(default_factory=list)
    results: list[ResultDetails] = field(default_factory=list)
    files: int = 0
    bytes: int = 0
    symlinks: int = 0


def normalized_id(ref: str) -> str | None:
    """`ref` as a dashed lowercase UUID (it may come without dashes or in capitals)."""
    try:
        return str(uuid.UUID(ref.strip()))
    except ValueError:
        return None


def find_snapshots(session: Session, ref: str) -> list[str]:
    """Ids of the snapshots `ref` names: an id (any UUID spelling, or a prefix of at least 8
    characters) or a timestamp; oldest first."""
    ref = ref.strip()
    wanted = normalized_id(ref)
    query = select(Snapshot.id).order_by(Snapshot.created_at, Snapshot.id)
    if wanted is not None:
        return list(session.scalars(query.where(Snapshot.id == wanted)))
    found = list(session.scalars(query.where(Snapshot.timestamp == ref)))
    if not found and len(ref) >= 8 and all(c in "0123456789abcdef-" for c in ref.lower()):
        found = list(session.scalars(query.where(Snapshot.id.startswith(ref.lower())).limit(10)))
    return found


def snapshot_details(session: Session, snapshot_id: str) -> SnapshotDetails | None:
    snapshot = session.get(Snapshot, snapshot_id)
    if snapshot is None:
        return None
    tags = sorted(session.scalars(select(Tag.name).join(SnapshotTag, SnapshotTag.tag_id == Tag.id)
                                  .where(SnapshotTag.snapshot_id == snapshot_id)))
    results = [ResultDetails(r.extractor, r.status, r.output, r.start_ts, r.end_ts,
                             r.archivebox_id, r.archivebox_uuid)
               for r in session.scalars(select(ArchiveResult)
                                        .where(ArchiveResult.snapshot_id == snapshot_id)
                                        .order_by(ArchiveResult.start_ts, ArchiveResult.id))]
    files, size = session.execute(
        select(func.count(), func.coalesce(func.sum(Blob.size), 0)).select_from(SnapshotFile)
        .join(Blob, Blob.id == SnapshotFile.blob_id)
        .where(SnapshotFile.snapshot_id == snapshot_id)).one()
    links = session.scalar(select(func.count()).select_from(SnapshotEntry)
                           .where(SnapshotEntry.snapshot_id == snapshot_id,
                                  SnapshotEntry.kind == "symlink")) or 0
    return SnapshotDetails(
        id=snapshot.id, url=snapshot.url, timestamp=snapshot.timestamp, title=snapshot.title,
        added=snapshot.created_at, updated=snapshot.archived_updated_at,
        fs_version=snapshot.fs_version, created_by=snapshot.created_by,
        crawl_id=snapshot.crawl_id, tags=tags, results=results, files=int(files),
        bytes=int(size), symlinks=int(links))
