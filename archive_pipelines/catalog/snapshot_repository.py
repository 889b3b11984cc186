"""Snapshots: adding, finding and deleting them, their tags and archive results, the state
of an ingest into one (complete or not), and the details `show` prints."""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import NamedTuple

from sqlalchemy import Select, delete, func, insert, select, update
from sqlalchemy.orm import Session

from archive_pipelines.catalog.file_repository import FileRepository
from archive_pipelines.catalog.models import (
    ArchiveResult,
    Blob,
    Snapshot,
    SnapshotEntry,
    SnapshotFile,
    SnapshotTag,
    Tag,
    new_id,
)
from archive_pipelines.catalog.repository_base import BoundSession, Repository, _reads, _writes
from archive_pipelines.catalog.statements import chunks, insert_ignore, snapshots_created_between


class IngestState(NamedTuple):
    """A snapshot as an ingest sees it: where it is filed, whether it is complete, and the
    last ingest into it (source folder, extractor, start)."""

    snapshot_id: str
    url: str
    timestamp: str
    created_at: datetime
    completed_at: datetime | None
    ingest_source: str | None
    ingest_extractor: str | None
    ingest_started_at: datetime | None

    @property
    def complete(self) -> bool:
        return self.completed_at is not None


_StateRow = Select[str, str, str, datetime, datetime | None, str | None, str | None,
                   datetime | None]


def _states() -> _StateRow:
    return select(Snapshot.id, Snapshot.url, Snapshot.timestamp, Snapshot.created_at,
                  Snapshot.completed_at, Snapshot.ingest_source, Snapshot.ingest_extractor,
                  Snapshot.ingest_started_at)


def _tag_ids(session: Session, names: Sequence[str]) -> dict[str, int]:
    found: dict[str, int] = {}
    for chunk in chunks(names):
        for name, tag_id in session.execute(select(Tag.name, Tag.id).where(Tag.name.in_(chunk))):
            found[name] = tag_id
    return found


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


def _get_or_create_tag(session: Session, name: str) -> Tag:
    name = name.strip()
    if not name:
        raise ValueError("tag names cannot be empty")
    tag = session.scalars(select(Tag).where(Tag.name == name)).first()
    if tag is None:
        tag = Tag(name=name)
        session.add(tag)
        session.flush()
    return tag


class SnapshotRepository(Repository):
    """Snapshots, their tags and archive results, ingest completion, details and lookups."""

    @_writes
    def add_snapshot(
        self,
        session: Session,
        *,
        url: str,
        timestamp: str,
        title: str | None = None,
        created_at: datetime | None = None,
        created_by: str = "system",
        crawl_id: str | None = None,
        fs_version: str = "cas",
        tags: Iterable[str] = (),
        snapshot_id: str | None = None,
    ) -> Snapshot:
        snapshot = Snapshot(
            url=url,
            timestamp=timestamp,
            title=title,
            created_by=created_by,
            crawl_id=crawl_id,
            fs_version=fs_version,
        )
        if snapshot_id:
            snapshot.id = snapshot_id
        if created_at is not None:
            snapshot.created_at = created_at
        snapshot.tags = [_get_or_create_tag(session, name) for name in sorted(set(tags))]
        session.add(snapshot)
        session.flush()
        return snapshot

    @_reads
    def get_snapshot(self, session: Session, snapshot_id: str) -> Snapshot | None:
        return session.get(Snapshot, snapshot_id)

    @_reads
    def find_snapshot(self, session: Session, *, url: str, timestamp: str | None = None,
                      crawl_id: str | None = None) -> Snapshot | None:
        """The oldest snapshot with this url and timestamp (or crawl id)."""
        query = select(Snapshot).where(Snapshot.url == url)
        if timestamp is not None:
            query = query.where(Snapshot.timestamp == timestamp)
        if crawl_id is not None:
            query = query.where(Snapshot.crawl_id == crawl_id)
        query = query.order_by(Snapshot.created_at, Snapshot.id).limit(1)
        return session.scalars(query).first()

    @_reads
    def known_timestamps(self, session: Session, timestamps: Iterable[str]) -> set[str]:
        """Which of these legacy timestamps the catalog has (one query, bounded input).

        Core, not the ORM: `init` calls this, and configuring the ORM mappers would be its
        most expensive step.
        """
        wanted = list(set(timestamps))
        if not wanted:
            return set()
        column = Snapshot.__table__.c.timestamp
        return set(session.connection().scalars(select(column).where(column.in_(wanted))))

    @_writes
    def delete_snapshot(self, session: Session, snapshot_id: str) -> bool:
        """Delete a snapshot, releasing its files' blob references in the same transaction.

        View links are the storage layer's business (`storage.files.delete_snapshot`).
        """
        files = FileRepository(BoundSession(session))
        rows = files.snapshot_file_rows(snapshot_id)
        files.release_files([(row[0], row[1]) for row in rows])
        return self._on(session).delete_snapshot_row(snapshot_id)

    @_writes
    def delete_snapshot_row(self, session: Session, snapshot_id: str) -> bool:
        """Delete the snapshot's row; False when there was none. Its files' references are
        the caller's to release first (`FileRepository.release_files`)."""
        result = session.execute(delete(Snapshot).where(Snapshot.id == snapshot_id))
        return bool(getattr(result, "rowcount", 0))

    @_writes
    def set_tags(self, session: Session, snapshot_id: str, names: Iterable[str]) -> list[str]:
        snapshot = session.get(Snapshot, snapshot_id)
        if snapshot is None:
            raise KeyError(snapshot_id)
        snapshot.tags = [_get_or_create_tag(session, n) for n in sorted(set(names))]
        return [t.name for t in snapshot.tags]

    @_writes
    def add_result(self, session: Session, snapshot_id: str, *, extractor: str,
                   status: str = "succeeded", output: str | None = None,
                   cmd: list[str] | None = None, cmd_version: str | None = None,
                   pwd: str | None = None, start_ts: datetime | None = None,
                   end_ts: datetime | None = None) -> ArchiveResult:
        result = ArchiveResult(
            snapshot_id=snapshot_id, extractor=extractor, status=status, output=output,
            cmd=cmd, cmd_version=cmd_version, pwd=pwd, start_ts=start_ts, end_ts=end_ts,
        )
        session.add(result)
        session.flush()
        return result

    @_reads
    def results_for(self, session: Session, snapshot_id: str) -> list[ArchiveResult]:
        return list(session.scalars(
            select(ArchiveResult)
            .where(ArchiveResult.snapshot_id == snapshot_id)
            .order_by(ArchiveResult.extractor, ArchiveResult.id)
        ))

    @_reads
    def ingest_state(self, session: Session, snapshot_id: str) -> IngestState | None:
        row = session.execute(_states().where(Snapshot.id == snapshot_id)).first()
        return None if row is None else IngestState._make(row)

    @_reads
    def snapshot_at(self, session: Session, *, url: str, timestamp: str) -> IngestState | None:
        """The oldest snapshot of `url` with this legacy timestamp."""
        row = session.execute(_states().where(Snapshot.url == url, Snapshot.timestamp == timestamp)
                              .order_by(Snapshot.created_at, Snapshot.id).limit(1)).first()
        return None if row is None else IngestState._make(row)

    @_reads
    def latest_created_at(self, session: Session, timestamp: str) -> datetime | None:
        """The latest created_at of the snapshots with this legacy timestamp, if any."""
        return session.scalar(select(func.max(Snapshot.created_at))
                              .where(Snapshot.timestamp == timestamp))

    @_writes
    def add_incomplete_snapshot(self, session: Session, *, url: str, timestamp: str, title: str | None,
                                created_at: datetime, created_by: str, source: str, extractor: str,
                                started_at: datetime) -> str:
        """A new snapshot, incomplete until `mark_complete`, filled by an ingest of `source` as
        `extractor` that starts at `started_at`; its id."""
        snapshot_id = new_id()
        # Core, with completed_at given: the ORM would take None as "use the default" (now).
        session.execute(insert(Snapshot).values(
            id=snapshot_id, url=url, timestamp=timestamp, title=title, created_at=created_at,
            created_by=created_by, fs_version="cas", completed_at=None, ingest_source=source,
            ingest_extractor=extractor, ingest_started_at=started_at))
        return snapshot_id

    @_writes
    def start_ingest(self, session: Session, snapshot_id: str, *, source: str, extractor: str,
                     started_at: datetime) -> None:
        """An ingest of `source` as `extractor` starts filling this existing snapshot: it is
        incomplete until `mark_complete`."""
        session.execute(update(Snapshot).where(Snapshot.id == snapshot_id).values(
            completed_at=None, ingest_source=source, ingest_extractor=extractor,
            ingest_started_at=started_at))

    @_writes
    def mark_complete(self, session: Session, snapshot_id: str, now: datetime) -> None:
        """The ingest filling the snapshot committed its last file."""
        session.execute(update(Snapshot)
                        .where(Snapshot.id == snapshot_id, Snapshot.completed_at.is_(None))
                        .values(completed_at=now))

    @_reads
    def find_incomplete(self, session: Session, *, url: str, source: str) -> IngestState | None:
        """The oldest incomplete snapshot of `url` that an ingest of `source` was filling."""
        row = session.execute(
            _states().where(Snapshot.completed_at.is_(None), Snapshot.url == url,
                            Snapshot.ingest_source == source)
            .order_by(Snapshot.created_at, Snapshot.id).limit(1)).first()
        return None if row is None else IngestState._make(row)

    @_reads
    def count_incomplete(self, session: Session, created_between: tuple[datetime, datetime] | None = None
                         ) -> int:
        """How many snapshots are incomplete (optionally of those created in [start, end))."""
        query = select(func.count()).select_from(Snapshot).where(Snapshot.completed_at.is_(None))
        if created_between is not None:
            query = query.where(Snapshot.id.in_(snapshots_created_between(*created_between)))
        return int(session.scalar(query) or 0)

    @_reads
    def incomplete_snapshots(self, session: Session, *, limit: int | None = None,
                             created_between: tuple[datetime, datetime] | None = None
                             ) -> list[IngestState]:
        """Incomplete snapshots, oldest first (`limit` of them; optionally of those created in
        [start, end))."""
        query = _states().where(Snapshot.completed_at.is_(None))
        if created_between is not None:
            query = query.where(Snapshot.id.in_(snapshots_created_between(*created_between)))
        query = query.order_by(Snapshot.created_at, Snapshot.id).limit(limit)
        return [IngestState._make(row) for row in session.execute(query)]

    @_reads
    def files_recorded_since(self, session: Session, snapshot_id: str, since: datetime
                             ) -> dict[str, str]:
        """{relative_path: sha256} of the snapshot's files first recorded at or after `since`
        (those an ingest that started then has committed)."""
        query = (select(SnapshotFile.relative_path, Blob.sha256)
                 .join(Blob, Blob.id == SnapshotFile.blob_id)
                 .where(SnapshotFile.snapshot_id == snapshot_id, SnapshotFile.created_at >= since))
        return {rel: sha for rel, sha in session.execute(query)}

    @_reads
    def has_files(self, session: Session, snapshot_id: str) -> bool:
        """Whether any file is recorded in the snapshot."""
        query = select(SnapshotFile.id).where(SnapshotFile.snapshot_id == snapshot_id).limit(1)
        return session.scalar(query) is not None

    @_writes
    def tag_ids(self, session: Session, names: Iterable[str]) -> dict[str, int]:
        """Ids of these tags, creating the missing ones (safe against concurrent creators)."""
        wanted = sorted(set(names))
        ids = _tag_ids(session, wanted)
        missing = [name for name in wanted if name not in ids]
        if missing:
            ins = insert_ignore(session)(Tag).on_conflict_do_nothing(index_elements=["name"])
            session.execute(ins, [{"name": name} for name in missing])
            ids.update(_tag_ids(session, missing))
        return ids

    @_writes
    def add_tags(self, session: Session, pairs: Iterable[tuple[str, int]]) -> None:
        """Link (snapshot id, tag id) pairs; existing links are kept as they are."""
        values = [{"snapshot_id": sid, "tag_id": tid} for sid, tid in sorted(set(pairs))]
        if values:
            ins = insert_ignore(session)(SnapshotTag).on_conflict_do_nothing(
                index_elements=["snapshot_id", "tag_id"])
            session.execute(ins, values)

    @_writes
    def replace_tags(self, session: Session, snapshot_id: str, names: Iterable[str]) -> None:
        """Make `names` (trimmed; empty ones dropped) the snapshot's whole set of tags."""
        wanted = sorted({name.strip() for name in names if name and name.strip()})
        session.execute(delete(SnapshotTag).where(SnapshotTag.snapshot_id == snapshot_id))
        ids = self._on(session).tag_ids(wanted)
        self._on(session).add_tags([(snapshot_id, ids[name]) for name in wanted])

    @_reads
    def find_snapshots(self, session: Session, ref: str) -> list[str]:
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

    @_reads
    def snapshot_details(self, session: Session, snapshot_id: str) -> SnapshotDetails | None:
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
