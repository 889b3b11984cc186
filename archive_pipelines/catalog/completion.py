"""Snapshot completion: which snapshots an `ingest` is filling (or an interrupted one left
partial), found by id or by source folder and URL, and marked complete at the end."""

from __future__ import annotations

from datetime import datetime
from typing import NamedTuple

from sqlalchemy import Select, func, insert, select, update
from sqlalchemy.orm import Session

from archive_pipelines.catalog.days import snapshots_created_between
from archive_pipelines.catalog.models import Blob, Snapshot, SnapshotFile, new_id


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


def ingest_state(session: Session, snapshot_id: str) -> IngestState | None:
    row = session.execute(_states().where(Snapshot.id == snapshot_id)).first()
    return None if row is None else IngestState._make(row)


def snapshot_at(session: Session, *, url: str, timestamp: str) -> IngestState | None:
    """The oldest snapshot of `url` with this legacy timestamp."""
    row = session.execute(_states().where(Snapshot.url == url, Snapshot.timestamp == timestamp)
                          .order_by(Snapshot.created_at, Snapshot.id).limit(1)).first()
    return None if row is None else IngestState._make(row)


def latest_created_at(session: Session, timestamp: str) -> datetime | None:
    """The latest created_at of the snapshots with this legacy timestamp, if any."""
    return session.scalar(select(func.max(Snapshot.created_at))
                          .where(Snapshot.timestamp == timestamp))


def add_incomplete_snapshot(session: Session, *, url: str, timestamp: str, title: str | None,
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


def start_ingest(session: Session, snapshot_id: str, *, source: str, extractor: str,
                 started_at: datetime) -> None:
    """An ingest of `source` as `extractor` starts filling this existing snapshot: it is
    incomplete until `mark_complete`."""
    session.execute(update(Snapshot).where(Snapshot.id == snapshot_id).values(
        completed_at=None, ingest_source=source, ingest_extractor=extractor,
        ingest_started_at=started_at))


def mark_complete(session: Session, snapshot_id: str, now: datetime) -> None:
    """The ingest filling the snapshot committed its last file."""
    session.execute(update(Snapshot)
                    .where(Snapshot.id == snapshot_id, Snapshot.completed_at.is_(None))
                    .values(completed_at=now))


def find_incomplete(session: Session, *, url: str, source: str) -> IngestState | None:
    """The oldest incomplete snapshot of `url` that an ingest of `source` was filling."""
    row = session.execute(
        _states().where(Snapshot.completed_at.is_(None), Snapshot.url == url,
                        Snapshot.ingest_source == source)
        .order_by(Snapshot.created_at, Snapshot.id).limit(1)).first()
    return None if row is None else IngestState._make(row)


def count_incomplete(session: Session, created_between: tuple[datetime, datetime] | None = None
                     ) -> int:
    """How many snapshots are incomplete (optionally of those created in [start, end))."""
    query = select(func.count()).select_from(Snapshot).where(Snapshot.completed_at.is_(None))
    if created_between is not None:
        query = query.where(Snapshot.id.in_(snapshots_created_between(*created_between)))
    return int(session.scalar(query) or 0)


def incomplete_snapshots(session: Session, *, limit: int | None = None,
                         created_between: tuple[datetime, datetime] | None = None
                         ) -> list[IngestState]:
    """Incomplete snapshots, oldest first (`limit` of them; optionally of those created in
    [start, end))."""
    query = _states().where(Snapshot.completed_at.is_(None))
    if created_between is not None:
        query = query.where(Snapshot.id.in_(snapshots_created_between(*created_between)))
    query = query.order_by(Snapshot.created_at, Snapshot.id).limit(limit)
    return [IngestState._make(row) for row in session.execute(query)]


def files_recorded_since(session: Session, snapshot_id: str, since: datetime
                         ) -> dict[str, str]:
    """{relative_path: sha256} of the snapshot's files first recorded at or after `since`
    (those an ingest that started then has committed)."""
    query = (select(SnapshotFile.relative_path, Blob.sha256)
             .join(Blob, Blob.id == SnapshotFile.blob_id)
             .where(SnapshotFile.snapshot_id == snapshot_id, SnapshotFile.created_at >= since))
    return {rel: sha for rel, sha in session.execute(query)}


def has_files(session: Session, snapshot_id: str) -> bool:
    """Whether any file is recorded in the snapshot."""
    query = select(SnapshotFile.id).where(SnapshotFile.snapshot_id == snapshot_id).limit(1)
    return session.scalar(query) is not None


__all__ = ["IngestState", "add_incomplete_snapshot", "count_incomplete", "files_recorded_since",
           "find_incomplete", "has_files", "incomplete_snapshots", "ingest_state", "latest_created_at",
           "mark_complete", "snapshot_at", "start_ingest"]
