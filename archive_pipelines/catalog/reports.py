"""Report tables for the assets' metadata: captures per site of a day, a day's largest dedup
savings. Read-only queries, each bounded by one partition's rows."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import case, func, select
from sqlalchemy.orm import Session

from archive_pipelines.catalog.days import snapshots_created_between
from archive_pipelines.catalog.models import Blob, CrawlSegment, PageFetch, SnapshotFile


@dataclass(frozen=True)
class SiteCaptures:
    """One site's captures among a day's crawl segments."""

    site: str
    pages: int  # kind 'page'
    captures: int  # pages, sub-requests and redirect hops
    body_bytes: int  # bytes of the bodies captured (before dedup)


def captures_per_site(session: Session, day: str) -> list[SiteCaptures]:
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


def largest_savings(session: Session, start: datetime, end: datetime, limit: int) -> list[Saving]:
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
