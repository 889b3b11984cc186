"""The catalog repository: the one place that owns snapshot, tag and result queries."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import delete, func, select
from sqlalchemy.orm import Session

from archive_pipelines.catalog.completion import (
    IngestState,
    count_incomplete,
    incomplete_snapshots,
    latest_created_at,
)
from archive_pipelines.catalog.engine import reader
from archive_pipelines.catalog.errors import clear_catalog_errors
from archive_pipelines.catalog.files import release_files, snapshot_file_rows
from archive_pipelines.catalog.models import (
    ArchiveResult,
    Blob,
    BlobCopy,
    CrawlSegment,
    CrawlSession,
    PageFetch,
    Snapshot,
    SnapshotFile,
    SnapshotTag,
    Store,
    Tag,
)
from archive_pipelines.catalog.sessions import Transactions


@dataclass(frozen=True)
class CatalogStatus:
    """Row counts, for `status` and run metadata."""

    snapshots: int
    archive_results: int
    tags: int
    blobs: int
    blob_bytes: int
    snapshot_files: int
    referenced_bytes: int
    stores: int
    blob_copies: int
    crawl_sessions: int
    crawl_segments: int
    page_fetches: int  # captures


class CatalogRepository(Transactions):
    """Snapshots, tags, archive results and catalog-wide counts."""

    # -- snapshots ---------------------------------------------------------------

    def add_snapshot(
        self,
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
        with self.session() as session:
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
            snapshot.tags = [self._get_or_create_tag(session, name) for name in sorted(set(tags))]
            session.add(snapshot)
            session.flush()
            return snapshot

    def get_snapshot(self, snapshot_id: str) -> Snapshot | None:
        with self.read_session() as session:
            return session.get(Snapshot, snapshot_id)

    def find_snapshot(self, *, url: str, timestamp: str | None = None,
                      crawl_id: str | None = None) -> Snapshot | None:
        """The oldest snapshot with this url and timestamp (or crawl id)."""
        query = select(Snapshot).where(Snapshot.url == url)
        if timestamp is not None:
            query = query.where(Snapshot.timestamp == timestamp)
        if crawl_id is not None:
            query = query.where(Snapshot.crawl_id == crawl_id)
        query = query.order_by(Snapshot.created_at, Snapshot.id).limit(1)
        with self.read_session() as session:
            return session.scalars(query).first()

    def latest_created_at(self, timestamp: str) -> datetime | None:
        """The latest created_at of the snapshots with this legacy timestamp, if any."""
        with self.read_session() as session:
            return latest_created_at(session, timestamp)

    def known_timestamps(self, timestamps: Iterable[str]) -> set[str]:
        """Which of these legacy timestamps the catalog has (one query, bounded input).

        Core, not the ORM: `init` calls this, and configuring the ORM mappers would be its
        most expensive step.
        """
        wanted = list(set(timestamps))
        if not wanted:
            return set()
        column = Snapshot.__table__.c.timestamp
        with clear_catalog_errors(), reader(self.engine).connect() as conn:
            return set(conn.scalars(select(column).where(column.in_(wanted))))

    def delete_snapshot(self, snapshot_id: str) -> bool:
        """Delete a snapshot, releasing its files' blob references in the same transaction.

        View links are the storage layer's business (`storage.removal.delete_snapshot`).
        """
        with self.session() as session:
            rows = snapshot_file_rows(session, snapshot_id)
            release_files(session, [(row[0], row[1]) for row in rows])
            return delete_snapshot_row(session, snapshot_id)

    def count_incomplete(self) -> int:
        """Snapshots an ingest is filling or an interrupted one left partial."""
        with self.read_session() as session:
            return count_incomplete(session)

    def incomplete_snapshots(self, limit: int | None = None) -> list[IngestState]:
        """The incomplete snapshots, oldest first (`limit` of them)."""
        with self.read_session() as session:
            return incomplete_snapshots(session, limit=limit)

    # -- tags and results --------------------------------------------------------

    def set_tags(self, snapshot_id: str, names: Iterable[str]) -> list[str]:
        with self.session() as session:
            snapshot = session.get(Snapshot, snapshot_id)
            if snapshot is None:
                raise KeyError(snapshot_id)
            snapshot.tags = [self._get_or_create_tag(session, n) for n in sorted(set(names))]
            return [t.name for t in snapshot.tags]

    def add_result(self, snapshot_id: str, *, extractor: str, status: str = "succeeded",
                   output: str | None = None, cmd: list[str] | None = None,
                   cmd_version: str | None = None, pwd: str | None = None,
                   start_ts: datetime | None = None,
                   end_ts: datetime | None = None) -> ArchiveResult:
        with self.session() as session:
            result = ArchiveResult(
                snapshot_id=snapshot_id, extractor=extractor, status=status, output=output,
                cmd=cmd, cmd_version=cmd_version, pwd=pwd, start_ts=start_ts, end_ts=end_ts,
            )
            session.add(result)
            session.flush()
            return result

    def results_for(self, snapshot_id: str) -> list[ArchiveResult]:
        with self.read_session() as session:
            return list(session.scalars(
                select(ArchiveResult)
                .where(ArchiveResult.snapshot_id == snapshot_id)
                .order_by(ArchiveResult.extractor, ArchiveResult.id)
            ))

    @staticmethod
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

    # -- status ------------------------------------------------------------------

    def status(self) -> CatalogStatus:
        with self.read_session() as session:
            def count(model: type) -> int:
                return int(session.scalar(select(func.count()).select_from(model)) or 0)

            blob_bytes = session.scalar(select(func.coalesce(func.sum(Blob.size), 0))) or 0
            # Bytes of the blobs something references (snapshot files, captures, segments).
            referenced = session.scalar(
                select(func.coalesce(func.sum(Blob.size), 0)).where(Blob.ref_count > 0)
            ) or 0
            return CatalogStatus(
                snapshots=count(Snapshot),
                archive_results=count(ArchiveResult),
                tags=count(Tag),
                blobs=count(Blob),
                blob_bytes=int(blob_bytes),
                snapshot_files=count(SnapshotFile),
                referenced_bytes=int(referenced),
                stores=count(Store),
                blob_copies=count(BlobCopy),
                crawl_sessions=count(CrawlSession),
                crawl_segments=count(CrawlSegment),
                page_fetches=count(PageFetch),
            )


def delete_snapshot_row(session: Session, snapshot_id: str) -> bool:
    """Delete the snapshot's row; False when there was none. Its files' references are the
    caller's to release first (`files.release_files`)."""
    result = session.execute(delete(Snapshot).where(Snapshot.id == snapshot_id))
    return bool(getattr(result, "rowcount", 0))


__all__ = ["CatalogRepository", "CatalogStatus", "SnapshotTag", "delete_snapshot_row"]
