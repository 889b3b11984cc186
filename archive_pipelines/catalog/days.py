"""Snapshots of a time window (a day partition) and what their files take."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, time, timedelta
from typing import Any

from sqlalchemy import Select, func, select
from sqlalchemy.orm import Session

from archive_pipelines.catalog.models import Blob, Snapshot, SnapshotFile


def snapshots_created_between(start: datetime, end: datetime) -> Select[Any]:
    """Ids of snapshots created in [start, end) (uses ix_snapshot_created_at)."""
    return select(Snapshot.id).where(Snapshot.created_at >= start, Snapshot.created_at < end)


def snapshot_ids_created_between(session: Session, start: datetime, end: datetime) -> list[str]:
    return list(session.scalars(snapshots_created_between(start, end)))


def snapshot_days(session: Session) -> list[str]:
    """The UTC days (YYYY-MM-DD) on which snapshots were created, oldest first.

    One index seek per day with snapshots (`min(created_at)` past the day before), the same
    SQL on SQLite and PostgreSQL: ~10,000 seeks for a 30-year daily archive, whatever the
    number of snapshots.
    """
    days: list[str] = []
    start: datetime | None = None
    while True:
        query = select(func.min(Snapshot.created_at))
        if start is not None:
            query = query.where(Snapshot.created_at >= start)
        first = session.scalar(query)
        if first is None:
            return days
        day = first.astimezone(UTC).date()
        days.append(day.isoformat())
        start = datetime.combine(day + timedelta(days=1), time(), UTC)


@dataclass(frozen=True)
class DayStats:
    snapshots: int
    legacy_ids: frozenset[str]  # the day's snapshots with a legacy folder still to migrate
    files: int
    logical_bytes: int
    unique_blobs: int
    unique_bytes: int
    new_blobs: int

    @property
    def bytes_saved(self) -> int:
        return self.logical_bytes - self.unique_bytes

    @property
    def dedup_ratio(self) -> float:
        return self.logical_bytes / self.unique_bytes if self.unique_bytes else 1.0


def day_stats(session: Session, start: datetime, end: datetime) -> DayStats:
    """Snapshots created in [start, end), their files, bytes and dedup, and the blobs first
    stored then."""
    ids = snapshots_created_between(start, end)
    snapshots = session.scalar(select(func.count()).select_from(ids.subquery())) or 0
    legacy = frozenset(session.scalars(
        select(Snapshot.id).where(Snapshot.id.in_(ids),
                                  Snapshot.fs_version.not_in(("cas", "0.x")))))
    files, logical = session.execute(
        select(func.count(), func.coalesce(func.sum(Blob.size), 0))
        .select_from(SnapshotFile).join(Blob, Blob.id == SnapshotFile.blob_id)
        .where(SnapshotFile.snapshot_id.in_(ids))).one()
    distinct_blobs = (select(SnapshotFile.blob_id.label("bid"))
                      .where(SnapshotFile.snapshot_id.in_(ids)).distinct().subquery())
    unique_blobs, unique_bytes = session.execute(
        select(func.count(), func.coalesce(func.sum(Blob.size), 0))
        .select_from(distinct_blobs).join(Blob, Blob.id == distinct_blobs.c.bid)).one()
    new_blobs = session.scalar(select(func.count()).select_from(Blob).where(
        Blob.created_at >= start, Blob.created_at < end)) or 0
    return DayStats(snapshots=int(snapshots), legacy_ids=legacy, files=int(files),
                    logical_bytes=int(logical), unique_blobs=int(unique_blobs),
                    unique_bytes=int(unique_bytes), new_blobs=int(new_blobs))


__all__ = ["DayStats", "day_stats", "snapshot_ids_created_between", "snapshots_created_between"]
