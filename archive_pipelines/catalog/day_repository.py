"""A day's snapshots: ids, days with snapshots, stats and report tables."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, time, timedelta

from sqlalchemy import case, func, select
from sqlalchemy.orm import Session

from archive_pipelines.catalog.models import Blob, CrawlSegment, PageFetch, Snapshot, SnapshotFile
from archive_pipelines.catalog.repository_base import Repository, _reads
from archive_pipelines.catalog.statements import snapshots_created_between


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


@dataclass(frozen=True)
class SiteCaptures:
    """One site's captures among a day's crawl segments."""

    site: str
    pages: int  # kind 'page'
    captures: int  # pages, sub-requests and redirect hops
    body_bytes: int  # bytes of the bodies captured (before dedup)


@dataclass(frozen=True)
class Saving:
    """A blob the day's files share: stored once for `references` files in the catalog."""

    sha256: str
    size: int
    references: int
    example_path: str  # one of the day's paths holding it

    @property
    def bytes_saved(self) -> int:
        return self.size * (self.references - 1)


class DayRepository(Repository):
    """Snapshots by creation day: the days, their stats and report tables."""

    @_reads
    def snapshot_ids_created_between(self, session: Session, start: datetime, end: datetime) -> list[str]:
        return list(session.scalars(snapshots_created_between(start, end)))

    @_reads
    def snapshot_days(self, session: Session) -> list[str]:
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

    @_reads
    def day_stats(self, session: Session, start: datetime, end: datetime) -> DayStats:
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

    @_reads
    def captures_per_site(self, session: Session, day: str) -> list[SiteCaptures]:
        """Per site (scheme://host[:port]), the captures of the segments under sessions/<day>/,
        most pages first."""
        pages = func.sum(case((PageFetch.kind == "page", 1), else_=0))
        rows = session.execute(
            select(PageFetch.site, pages, func.count(), func.coalesce(func.sum(PageFetch.body_size), 0))
            .join(CrawlSegment, CrawlSegment.id == PageFetch.segment_id)
            .where(CrawlSegment.path.like(f"sessions/{day}/%"))
            .group_by(PageFetch.site))
        found = [SiteCaptures(site, int(n_pages or 0), int(n), int(size))
                 for site, n_pages, n, size in rows]
        return sorted(found, key=lambda s: (-s.pages, -s.captures, s.site))

    @_reads
    def largest_savings(self, session: Session, start: datetime, end: datetime, limit: int) -> list[Saving]:
        """The `limit` blobs of the day's snapshot files that dedup saves the most bytes on
        (size x (references - 1), references counted over the whole catalog)."""
        day_files = (select(SnapshotFile.blob_id.label("bid"),
                            func.min(SnapshotFile.relative_path).label("path"))
                     .where(SnapshotFile.snapshot_id.in_(snapshots_created_between(start, end)))
                     .group_by(SnapshotFile.blob_id).subquery())
        saved = Blob.size * (Blob.ref_count - 1)
        rows = session.execute(
            select(Blob.sha256, Blob.size, Blob.ref_count, day_files.c.path)
            .join(day_files, day_files.c.bid == Blob.id)
            .where(Blob.ref_count > 1)
            .order_by(saved.desc(), Blob.sha256).limit(limit))
        return [Saving(sha, int(size), int(refs), path) for sha, size, refs, path in rows]
