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
class FirstPage:
    """A site's first page captured among a day's crawl segments (what Dagit links to replay)."""

    site: str
    url: str
    fetched_ms: int


@dataclass(frozen=True)
class Saving:
    """A blob the day's files share: stored once for the day's `references` files to it."""

    sha256: str
    size: int
    references: int  # among the day's snapshot files
    example_path: str  # one of the day's paths holding it
    archive_references: int  # in the whole catalog (every day, captures, segments)

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
        """Snapshots created in [start, end), their files, bytes and dedup (among the day's
        files: a blob shared with other days counts once for the day)."""
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
        return DayStats(snapshots=int(snapshots), legacy_ids=legacy, files=int(files),
                        logical_bytes=int(logical), unique_blobs=int(unique_blobs),
                        unique_bytes=int(unique_bytes))

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
    def first_pages(self, session: Session, day: str, *, limit: int) -> list[FirstPage]:
        """Of up to `limit` sites (by name), the first page each captured with a body in the
        segments under sessions/<day>/."""
        first = (select(PageFetch.site, func.min(PageFetch.id).label("first_id"))
                 .join(CrawlSegment, CrawlSegment.id == PageFetch.segment_id)
                 .where(CrawlSegment.path.like(f"sessions/{day}/%"), PageFetch.kind == "page",
                        PageFetch.body_blob_id.is_not(None))
                 .group_by(PageFetch.site).order_by(PageFetch.site).limit(limit).subquery())
        rows = session.execute(select(PageFetch.site, PageFetch.url, PageFetch.fetched_ms)
                               .join(first, first.c.first_id == PageFetch.id)
                               .order_by(PageFetch.site))
        return [FirstPage(site, url, int(ms)) for site, url, ms in rows]

    @_reads
    def crawl_segments_of_day(self, session: Session, day: str) -> int:
        """The segments under sessions/<day>/ the catalog has ingested (its ledger)."""
        return int(session.scalar(select(func.count()).select_from(CrawlSegment)
                                  .where(CrawlSegment.path.like(f"sessions/{day}/%"))) or 0)

    @_reads
    def largest_savings(self, session: Session, start: datetime, end: datetime, limit: int) -> list[Saving]:
        """The `limit` blobs of the day's snapshot files that dedup saves the most bytes on
        within the day: size x (the day's files holding it - 1), so the savings add up to
        `day_stats(...).bytes_saved` at most."""
        day_refs = (select(SnapshotFile.blob_id.label("bid"), func.count().label("refs"),
                           func.min(SnapshotFile.relative_path).label("path"))
                    .where(SnapshotFile.snapshot_id.in_(snapshots_created_between(start, end)))
                    .group_by(SnapshotFile.blob_id).having(func.count() > 1).subquery())
        saved = Blob.size * (day_refs.c.refs - 1)
        rows = session.execute(
            select(Blob.sha256, Blob.size, day_refs.c.refs, day_refs.c.path, Blob.ref_count)
            .join(day_refs, day_refs.c.bid == Blob.id)
            .order_by(saved.desc(), Blob.sha256).limit(limit))
        return [Saving(sha, int(size), int(refs), path, int(archive_refs))
                for sha, size, refs, path, archive_refs in rows]
