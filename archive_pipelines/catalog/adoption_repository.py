"""ArchiveBox adoption: snapshot and result rows in bulk, fs_version steps, duplicates."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal, cast

from sqlalchemy import Select, Table, and_, func, insert, select, tuple_, update
from sqlalchemy.orm import Session

from archive_pipelines.catalog.fs_versions import CAS, checked_fs_version
from archive_pipelines.catalog.models import (
    ArchiveResult,
    Blob,
    Snapshot,
    SnapshotEntry,
    SnapshotFile,
    SnapshotTag,
    Tag,
)
from archive_pipelines.catalog.repository_base import BoundSession, Repository, _reads, _writes
from archive_pipelines.catalog.snapshot_repository import SnapshotRepository
from archive_pipelines.catalog.statements import chunks, insert_ignore


@dataclass(frozen=True)
class SnapshotRow:
    """The snapshot columns adoption and migration look at."""

    id: str
    url: str
    timestamp: str
    title: str | None
    crawl_id: str | None
    fs_version: str
    created_at: datetime


@dataclass(frozen=True)
class ResultRow:
    """One archive_result row: an extractor run, as adoption compares and copies it."""

    extractor: str
    cmd: tuple[str, ...]
    cmd_version: str | None
    pwd: str | None
    output: str | None
    status: str
    start_ts: datetime | None
    end_ts: datetime | None
    archivebox_id: str | None
    archivebox_uuid: str | None


@dataclass(frozen=True)
class RecordedSnapshot:
    """What the catalog records of one snapshot beside its files."""

    row: SnapshotRow
    tags: tuple[str, ...]  # sorted
    results: dict[str, tuple[ResultRow, ...]]  # per extractor, in id order


@dataclass(frozen=True)
class FileRecord:
    """One snapshot_file row with its blob's hash and size."""

    extractor: str
    relative_path: str
    sha256: str
    size: int


ROW_COLUMNS = (Snapshot.id, Snapshot.url, Snapshot.timestamp, Snapshot.title, Snapshot.crawl_id,
                Snapshot.fs_version, Snapshot.created_at)


def _rows(session: Session, column: Any, values: Iterable[Any]) -> list[SnapshotRow]:
    wanted = sorted(set(values))
    found: list[SnapshotRow] = []
    for chunk in chunks(wanted):
        query = select(*ROW_COLUMNS).where(column.in_(chunk))
        found.extend(SnapshotRow(*row) for row in session.execute(query))
    found.sort(key=lambda r: (r.created_at, r.id))  # oldest first: the one a lookup returns
    return found


def folder_claimant(rows: Sequence[SnapshotRow], folder_url: str | None) -> SnapshotRow | None:
    """The snapshot whose files the real folder `archive/<timestamp>` holds, or None.

    `rows` are the snapshots with that timestamp, oldest (created_at, id) first. The folder is
    the oldest one's whose url is the folder's index.json url; failing that, the oldest one's
    not in the CAS layout yet (a CAS snapshot has no legacy folder of its own). Only that
    snapshot may migrate the folder: another one sharing the timestamp would take its files
    and leave a link in its place.
    """
    if folder_url:
        for row in rows:
            if row.url == folder_url:
                return row
    return next((row for row in rows if row.fs_version != CAS), None)


def result_of(result: ArchiveResult) -> ResultRow:
    return ResultRow(extractor=result.extractor, cmd=tuple(result.cmd or ()),
                     cmd_version=result.cmd_version, pwd=result.pwd, output=result.output,
                     status=result.status, start_ts=result.start_ts, end_ts=result.end_ts,
                     archivebox_id=result.archivebox_id, archivebox_uuid=result.archivebox_uuid)


def migration_query(label: str, after_id: str, limit: int) -> Select[Any]:
    """Ids with this fs_version after `after_id`, in id order: one (fs_version, id) range scan."""
    return (select(Snapshot.id).where(Snapshot.fs_version == label, Snapshot.id > after_id)
            .order_by(Snapshot.id).limit(limit))


EntryRow = tuple[str, str, str | None, bool]  # (relative_path, kind, target, inside)


DuplicateKey = Literal["timestamp", "crawl_id"]


def _key_column(key: DuplicateKey) -> Any:
    return Snapshot.timestamp if key == "timestamp" else Snapshot.crawl_id


@dataclass
class MergedRows:
    """What moved from a duplicate to its keeper (nothing when `differing` is not empty)."""

    moved_files: list[FileRecord]
    conflicts: int  # paths both have, with the same bytes: the keeper's row stays
    tags: int
    results: int
    differing: list[str] = field(default_factory=list)  # paths both have with other bytes


class AdoptionRepository(Repository):
    """Adopted collections' rows: snapshots and results in bulk, migration steps, duplicates."""

    @_reads
    def snapshots_by_timestamp(self, session: Session, timestamps: Iterable[str]) -> list[SnapshotRow]:
        """Snapshots with any of these timestamps (indexed), oldest first."""
        return _rows(session, Snapshot.timestamp, timestamps)

    @_reads
    def snapshots_by_crawl_id(self, session: Session, crawl_ids: Iterable[str]) -> list[SnapshotRow]:
        """Snapshots with any of these crawl ids (indexed), oldest first."""
        return _rows(session, Snapshot.crawl_id, crawl_ids)

    @_reads
    def snapshots_by_id(self, session: Session, ids: Iterable[str]) -> list[SnapshotRow]:
        return _rows(session, Snapshot.id, ids)

    @_reads
    def recorded_snapshots(self, session: Session, rows: Sequence[SnapshotRow]
                           ) -> dict[str, RecordedSnapshot]:
        """Each snapshot's tags and results beside its row, two queries per chunk."""
        tags: dict[str, list[str]] = {row.id: [] for row in rows}
        results: dict[str, dict[str, list[ResultRow]]] = {row.id: {} for row in rows}
        for chunk in chunks(list(tags)):
            query = (select(SnapshotTag.snapshot_id, Tag.name).join(Tag, Tag.id == SnapshotTag.tag_id)
                     .where(SnapshotTag.snapshot_id.in_(chunk)))
            for sid, name in session.execute(query):
                tags[sid].append(name)
            query2 = (select(ArchiveResult).where(ArchiveResult.snapshot_id.in_(chunk))
                      .order_by(ArchiveResult.id))
            for result in session.scalars(query2):
                results[result.snapshot_id].setdefault(result.extractor, []).append(result_of(result))
        return {
            row.id: RecordedSnapshot(
                row=row, tags=tuple(sorted(tags[row.id])),
                results={name: tuple(items) for name, items in results[row.id].items()})
            for row in rows
        }

    @_writes
    def insert_snapshots(self, session: Session, rows: Sequence[Mapping[str, Any]]) -> None:
        """Bulk insert of snapshot rows (each with its `id`); fs_version labels are checked."""
        for row in rows:
            if "fs_version" in row:
                checked_fs_version(row["fs_version"])
        if rows:  # Core executemany: no ORM bookkeeping for a bulk write
            session.execute(insert(cast(Table, Snapshot.__table__)), list(rows))

    @_writes
    def add_results(self, session: Session, rows: Sequence[Mapping[str, Any]]) -> None:
        if rows:
            session.execute(insert(cast(Table, ArchiveResult.__table__)), list(rows))

    @_writes
    def update_snapshot(self, session: Session, snapshot_id: str, **values: Any) -> None:
        if "fs_version" in values:
            checked_fs_version(values["fs_version"])
        session.execute(update(Snapshot).where(Snapshot.id == snapshot_id).values(**values))

    @_reads
    def migration_candidates(self, session: Session, label: str, after_id: str, limit: int) -> list[str]:
        return list(session.scalars(migration_query(label, after_id, limit)))

    @_writes
    def advance_fs_version(self, session: Session, ids: Sequence[str], from_label: str, to_label: str) -> int:
        """Set fs_version where it is still `from_label` (compare-and-set); rows changed."""
        checked_fs_version(to_label)
        changed = 0
        for chunk in chunks(list(ids)):
            result = session.execute(
                update(Snapshot).where(Snapshot.id.in_(chunk), Snapshot.fs_version == from_label)
                .values(fs_version=to_label).execution_options(synchronize_session=False))
            changed += result.rowcount or 0  # type: ignore[attr-defined]
        return changed

    @_writes
    def record_entries(self, session: Session, entries: Mapping[str, Sequence[EntryRow]]) -> None:
        """Record the symlinks and empty folders found in snapshot folders, per snapshot id. A
        path recorded already keeps its row (the first one seen)."""
        values = [{"snapshot_id": sid, "relative_path": rel, "kind": kind, "target": target,
                   "inside": inside} for sid, items in entries.items() for rel, kind, target, inside in items]
        if values:
            ins = insert_ignore(session)(SnapshotEntry).on_conflict_do_nothing(
                index_elements=["snapshot_id", "relative_path"])
            session.execute(ins, values)

    @_reads
    def snapshot_entries(self, session: Session, ids: Sequence[str]) -> dict[str, list[EntryRow]]:
        """The symlinks and empty folders recorded for these snapshots."""
        found: dict[str, list[EntryRow]] = {}
        for chunk in chunks(list(ids)):
            query = (select(SnapshotEntry.snapshot_id, SnapshotEntry.relative_path, SnapshotEntry.kind,
                            SnapshotEntry.target, SnapshotEntry.inside)
                     .where(SnapshotEntry.snapshot_id.in_(chunk)))
            for sid, rel, kind, target, inside in session.execute(query):
                found.setdefault(sid, []).append((rel, kind, target, bool(inside)))
        return found

    @_reads
    def file_records(self, session: Session, ids: Sequence[str]) -> dict[str, list[FileRecord]]:
        """Every file row of these snapshots with its blob's hash and size."""
        found: dict[str, list[FileRecord]] = {sid: [] for sid in ids}
        for chunk in chunks(list(ids)):
            query = (select(SnapshotFile.snapshot_id, SnapshotFile.extractor, SnapshotFile.relative_path,
                            Blob.sha256, Blob.size)
                     .join(Blob, Blob.id == SnapshotFile.blob_id).where(SnapshotFile.snapshot_id.in_(chunk)))
            for sid, extractor, rel, sha, size in session.execute(query):
                found[sid].append(FileRecord(extractor, rel, sha, int(size)))
        return found

    @_reads
    def duplicate_groups(self, session: Session, key: DuplicateKey, after: tuple[str, str] | None,
                         limit: int) -> list[tuple[str, str]]:
        """One page of (key value, url) groups holding more than one snapshot, keyset-paginated."""
        column = _key_column(key)
        query = select(column, Snapshot.url).where(column.is_not(None))
        if after is not None:
            query = query.where(tuple_(column, Snapshot.url) > tuple_(*after))
        query = (query.group_by(column, Snapshot.url).having(func.count() > 1)
                 .order_by(column, Snapshot.url).limit(limit))
        return [(str(value), str(url)) for value, url in session.execute(query)]

    @_reads
    def group_members(self, session: Session, key: DuplicateKey, value: str, url: str) -> list[SnapshotRow]:
        """The snapshots of one duplicate group, oldest (created_at, id) first."""
        query = (select(*ROW_COLUMNS).where(and_(_key_column(key) == value, Snapshot.url == url))
                 .order_by(Snapshot.created_at, Snapshot.id))
        return [SnapshotRow(*row) for row in session.execute(query)]

    @_writes
    def merge_snapshot_rows(self, session: Session, keeper_id: str, duplicate_id: str, *,
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
            select(SnapshotFile.id, SnapshotFile.extractor, SnapshotFile.relative_path, Blob.sha256,
                   Blob.size)
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
        SnapshotRepository(BoundSession(session)).add_tags([(keeper_id, tag_id) for tag_id in new_tags])
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
