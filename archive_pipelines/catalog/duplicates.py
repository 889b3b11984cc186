"""Exact duplicates: snapshots sharing a url and a timestamp (or crawl id), and merging one
into its keeper. Groups are keyset-paginated; one group's rows are loaded at a time."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from sqlalchemy import and_, func, select, tuple_, update
from sqlalchemy.orm import Session

from archive_pipelines.catalog.adoption import (
    ROW_COLUMNS,
    FileRecord,
    ResultRow,
    SnapshotRow,
    result_of,
)
from archive_pipelines.catalog.models import (
    ArchiveResult,
    Blob,
    Snapshot,
    SnapshotEntry,
    SnapshotFile,
    SnapshotTag,
)
from archive_pipelines.catalog.statements import chunks
from archive_pipelines.catalog.tags import add_tags

DuplicateKey = Literal["timestamp", "crawl_id"]


def _key_column(key: DuplicateKey) -> Any:
    return Snapshot.timestamp if key == "timestamp" else Snapshot.crawl_id


def duplicate_groups(session: Session, key: DuplicateKey, after: tuple[str, str] | None,
                     limit: int) -> list[tuple[str, str]]:
    """One page of (key value, url) groups holding more than one snapshot, keyset-paginated."""
    column = _key_column(key)
    query = select(column, Snapshot.url).where(column.is_not(None))
    if after is not None:
        query = query.where(tuple_(column, Snapshot.url) > tuple_(*after))
    query = (query.group_by(column, Snapshot.url).having(func.count() > 1)
             .order_by(column, Snapshot.url).limit(limit))
    return [(str(value), str(url)) for value, url in session.execute(query)]


def group_members(session: Session, key: DuplicateKey, value: str, url: str) -> list[SnapshotRow]:
    """The snapshots of one duplicate group, oldest (created_at, id) first."""
    query = (select(*ROW_COLUMNS).where(and_(_key_column(key) == value, Snapshot.url == url))
             .order_by(Snapshot.created_at, Snapshot.id))
    return [SnapshotRow(*row) for row in session.execute(query)]


@dataclass
class MergedRows:
    """What moved from a duplicate to its keeper (nothing when `differing` is not empty)."""

    moved_files: list[FileRecord]
    conflicts: int  # paths both have, with the same bytes: the keeper's row stays
    tags: int
    results: int
    differing: list[str] = field(default_factory=list)  # paths both have with other bytes


def merge_snapshot_rows(session: Session, keeper_id: str, duplicate_id: str, *,
                        same_run: Callable[[ResultRow, ResultRow], bool]) -> MergedRows:
    """Re-point the duplicate's files (ref counts unchanged), links, tags and results to the
    keeper, unless a path both have holds other bytes in each: then nothing changes and
    `differing` lists those paths (deleting the duplicate would drop original bytes).

    A path both have with the same bytes keeps the keeper's row; a result describing a run
    the keeper has (same extractor, and `same_run`) is dropped with the duplicate.
    """
    keeper_paths = dict(session.execute(
        select(SnapshotFile.relative_path, Blob.sha256).join(Blob, Blob.id == SnapshotFile.blob_id)
        .where(SnapshotFile.snapshot_id == keeper_id)).all())
    rows = session.execute(
        select(SnapshotFile.id, SnapshotFile.extractor, SnapshotFile.relative_path, Blob.sha256, Blob.size)
        .join(Blob, Blob.id == SnapshotFile.blob_id)
        .where(SnapshotFile.snapshot_id == duplicate_id)).all()
    differing = [row[2] for row in rows if keeper_paths.get(row[2], row[3]) != row[3]]
    if differing:
        return MergedRows([], 0, 0, 0, differing=sorted(differing))
    moving = [row for row in rows if row[2] not in keeper_paths]
    for chunk in chunks([row[0] for row in moving]):
        session.execute(update(SnapshotFile).where(SnapshotFile.id.in_(chunk))
                        .values(snapshot_id=keeper_id).execution_options(synchronize_session=False))
    keeper_entries = select(SnapshotEntry.relative_path).where(SnapshotEntry.snapshot_id == keeper_id)
    session.execute(update(SnapshotEntry).where(SnapshotEntry.snapshot_id == duplicate_id,
                                                SnapshotEntry.relative_path.not_in(keeper_entries))
                    .values(snapshot_id=keeper_id).execution_options(synchronize_session=False))
    tags = select(SnapshotTag.tag_id).where(SnapshotTag.snapshot_id == duplicate_id).except_(
        select(SnapshotTag.tag_id).where(SnapshotTag.snapshot_id == keeper_id))
    new_tags = list(session.scalars(tags))
    add_tags(session, [(keeper_id, tag_id) for tag_id in new_tags])
    kept = [result_of(r) for r in
            session.scalars(select(ArchiveResult).where(ArchiveResult.snapshot_id == keeper_id))]
    moved_results = []
    for result in session.scalars(select(ArchiveResult).where(ArchiveResult.snapshot_id == duplicate_id)):
        theirs = result_of(result)
        if not any(k.extractor == theirs.extractor and same_run(k, theirs) for k in kept):
            moved_results.append(result.id)
    for chunk in chunks(moved_results):
        session.execute(update(ArchiveResult).where(ArchiveResult.id.in_(chunk))
                        .values(snapshot_id=keeper_id).execution_options(synchronize_session=False))
    return MergedRows(moved_files=[FileRecord(r[1], r[2], r[3], int(r[4])) for r in moving],
                      conflicts=len(rows) - len(moving), tags=len(new_tags), results=len(moved_results))
