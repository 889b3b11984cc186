"""Imported WARC files in the catalog: their ledger (one row per batch of records, so a rerun
goes on where the last committed batch ended), their session's source, and the bodies that
revisit records refer to."""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from sqlalchemy import Select, select, update
from sqlalchemy.orm import Session

from archive_pipelines.catalog.models import (
    EXCHANGE_KINDS,
    Blob,
    CrawlSegment,
    CrawlSession,
    PageFetch,
    Snapshot,
    SnapshotFile,
)
from archive_pipelines.catalog.ref_counts import table_of
from archive_pipelines.catalog.repository_base import Repository, _reads, _writes
from archive_pipelines.catalog.statements import chunks

WARC_FOLDER = "warc/"


class SnapshotWarc(NamedTuple):
    """A file of a snapshot's `warc/` folder (its row id, for paging) and its blob."""

    file_id: int
    snapshot_id: str
    timestamp: str
    relative_path: str
    sha256: str
    size: int


_WarcRow = Select[int, str, str, str, str, int]


def _snapshot_warc_query() -> _WarcRow:
    return (select(SnapshotFile.id, SnapshotFile.snapshot_id, Snapshot.timestamp,
                   SnapshotFile.relative_path, Blob.sha256, Blob.size)
            .join(Snapshot, Snapshot.id == SnapshotFile.snapshot_id)
            .join(Blob, Blob.id == SnapshotFile.blob_id)
            .where(SnapshotFile.relative_path.startswith(WARC_FOLDER, autoescape=True)))


class ImportRepository(Repository):
    """WARC imports."""

    @_reads
    def ledger_paths(self, session: Session, prefix: str) -> list[str]:
        """The ledger paths (batches) under `prefix` (`imports/<sha256>/`)."""
        return list(session.scalars(select(CrawlSegment.path).where(
            CrawlSegment.path.startswith(prefix, autoescape=True))))

    @_reads
    def snapshot_warcs(self, session: Session, snapshot_ids: Sequence[str]) -> list[SnapshotWarc]:
        """The files under `warc/` of these snapshots, by snapshot and path."""
        found: list[SnapshotWarc] = []
        for chunk in chunks(list(snapshot_ids)):
            query = _snapshot_warc_query().where(SnapshotFile.snapshot_id.in_(chunk))
            found.extend(SnapshotWarc(*row) for row in session.execute(query))
        return sorted(found, key=lambda w: (w.timestamp, w.snapshot_id, w.relative_path))

    @_reads
    def snapshot_warc_page(self, session: Session, *, after: int, limit: int) -> list[SnapshotWarc]:
        """One page of every snapshot's files under `warc/`, by file row id after `after`."""
        query = (_snapshot_warc_query().where(SnapshotFile.id > after)
                 .order_by(SnapshotFile.id).limit(limit))
        return [SnapshotWarc(*row) for row in session.execute(query)]

    @_writes
    def mark_warc_session(self, session: Session, session_id: str, *, source: str,
                          snapshot_id: str | None = None) -> None:
        """In the caller's transaction: the session is an imported WARC file, named `source`
        (and the snapshot whose own WARC it is)."""
        table = table_of(CrawlSession)
        values: dict[str, object] = {"kind": "warc", "source": source[:2000]}
        if snapshot_id is not None:
            values["snapshot_id"] = snapshot_id
        session.execute(update(table).where(table.c.id == session_id).values(**values))

    @_reads
    def body_at(self, session: Session, url_hash: str, *, from_ms: int, to_ms: int
                ) -> tuple[str, int, str | None] | None:
        """(sha256, size, content type) of a stored body captured for the URL in the window,
        the earliest: what a revisit record's Refers-To-Target-URI and -Date name."""
        row = session.execute(
            select(PageFetch.body_sha256, PageFetch.body_size, PageFetch.content_type)
            .where(PageFetch.url_hash == url_hash, PageFetch.kind.in_(EXCHANGE_KINDS),
                   PageFetch.fetched_ms >= from_ms,
                   PageFetch.fetched_ms <= to_ms, PageFetch.body_blob_id.is_not(None))
            .order_by(PageFetch.fetched_ms, PageFetch.id).limit(1)).first()
        if row is None:
            return None
        return str(row[0]), int(row[1] or 0), row[2]

    @_reads
    def bodies_by_offset(self, session: Session, prefix: str
                         ) -> dict[int, tuple[str, int, str | None]]:
        """(sha256, size, content type) of each stored body captured from a file's committed
        batches (ledger paths under `prefix`), by the offset of its record."""
        rows = session.execute(
            select(PageFetch.record_offset, PageFetch.body_sha256, PageFetch.body_size,
                   PageFetch.content_type)
            .join(CrawlSegment, CrawlSegment.id == PageFetch.segment_id)
            .where(CrawlSegment.path.startswith(prefix, autoescape=True),
                   PageFetch.body_blob_id.is_not(None)))
        return {int(offset): (str(sha), int(size or 0), content_type)
                for offset, sha, size, content_type in rows}

    @_reads
    def body_with_digest(self, session: Session, sha256: str) -> tuple[str, int, str | None] | None:
        """(sha256, size, content type) of a stored body with this sha256, if a capture holds it."""
        row = session.execute(
            select(PageFetch.body_sha256, PageFetch.body_size, PageFetch.content_type)
            .where(PageFetch.body_sha256 == sha256, PageFetch.body_blob_id.is_not(None))
            .limit(1)).first()
        if row is None:
            return None
        return str(row[0]), int(row[1] or 0), row[2]
