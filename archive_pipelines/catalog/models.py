"""Catalog tables (SQLAlchemy 2 typed models). The catalog is the source of truth."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

from sqlalchemy import (
    BigInteger,
    Boolean,
    CheckConstraint,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
    UniqueConstraint,
)
from sqlalchemy.engine import Dialect
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship, validates
from sqlalchemy.types import JSON, TypeDecorator

from archive_pipelines.catalog.fs_versions import checked_fs_version

COPY_STATUSES = ("missing", "ongoing", "present", "corrupted")


def utcnow() -> datetime:
    return datetime.now(UTC)


def new_id() -> str:
    return str(uuid.uuid4())


class UtcDateTime(TypeDecorator[datetime]):
    """Timezone-aware UTC datetimes on both backends (SQLite stores no zone)."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError("catalog datetimes must be timezone-aware")
        return value.astimezone(UTC)

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


class Base(DeclarativeBase):
    pass


# Blob ids are 64-bit on PostgreSQL; SQLite needs INTEGER for rowid autoincrement.
BlobId = BigInteger().with_variant(Integer(), "sqlite")
# SURT keys compare byte by byte (SQLite's default; PostgreSQL's "C" collation), so the
# captures under a key prefix are one index range whatever the database's locale.
URLKEY = Text().with_variant(Text(collation="C"), "postgresql")


class Tag(Base):
    __tablename__ = "tag"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(255), unique=True)


class SnapshotTag(Base):
    __tablename__ = "snapshot_tag"

    snapshot_id: Mapped[str] = mapped_column(
        ForeignKey("snapshot.id", ondelete="CASCADE"), primary_key=True
    )
    tag_id: Mapped[int] = mapped_column(ForeignKey("tag.id", ondelete="CASCADE"), primary_key=True)

    __table_args__ = (Index("ix_snapshot_tag_tag", "tag_id"),)


class Snapshot(Base):
    __tablename__ = "snapshot"

    id: Mapped[str] = mapped_column(String(36), primary_key=True, default=new_id)
    url: Mapped[str] = mapped_column(Text)
    # The legacy ArchiveBox key, e.g. "1735142400.123"; also names by_timestamp/.
    timestamp: Mapped[str] = mapped_column(String(32))
    title: Mapped[str | None] = mapped_column(Text, default=None)
    created_at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow)
    created_by: Mapped[str] = mapped_column(String(150), default="system")
    crawl_id: Mapped[str | None] = mapped_column(String(64), default=None)
    fs_version: Mapped[str] = mapped_column(String(16), default="cas")
    updated_at: Mapped[datetime] = mapped_column(
        UtcDateTime(), default=utcnow, onupdate=utcnow
    )
    # ArchiveBox's own `updated` (last archived) for an adopted snapshot, as it had it;
    # `created_at` holds its `added`. `updated_at` is this catalog's row bookkeeping.
    archived_updated_at: Mapped[datetime | None] = mapped_column(UtcDateTime(), default=None)
    # NULL while an `ingest` is filling the snapshot (from its creation, or from the start of
    # an ingest into it, until that ingest's last file is committed): an interrupted ingest
    # leaves it so, and `ingest --resume` finishes it. Snapshots made otherwise are complete.
    completed_at: Mapped[datetime | None] = mapped_column(UtcDateTime(), default=utcnow)
    # The last `ingest` into it: the source folder (absolute), the extractor, and when that
    # ingest started (files recorded since then are the ones a resume skips).
    ingest_source: Mapped[str | None] = mapped_column(Text, default=None)
    ingest_extractor: Mapped[str | None] = mapped_column(String(64), default=None)
    ingest_started_at: Mapped[datetime | None] = mapped_column(UtcDateTime(), default=None)

    tags: Mapped[list[Tag]] = relationship(secondary="snapshot_tag", lazy="selectin")

    __table_args__ = (
        Index("ix_snapshot_timestamp", "timestamp"),
        # Lookups by (url, timestamp) / (url, crawl_id) go through these; url itself is
        # unbounded text, too long for a btree entry on PostgreSQL.
        Index("ix_snapshot_crawl_id", "crawl_id"),
        Index("ix_snapshot_created_at", "created_at"),
        # The lazy-migration sensor pages through (fs_version, id) with a cursor.
        Index("ix_snapshot_fs_version_id", "fs_version", "id"),
        # Incomplete snapshots (completed_at NULL) are listed by status and verify.
        Index("ix_snapshot_completed_at", "completed_at"),
    )

    @validates("fs_version")
    def _check_fs_version(self, _key: str, value: str) -> str:
        return checked_fs_version(value)


class ArchiveResult(Base):
    __tablename__ = "archive_result"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    snapshot_id: Mapped[str] = mapped_column(ForeignKey("snapshot.id", ondelete="CASCADE"))
    extractor: Mapped[str] = mapped_column(String(64))
    status: Mapped[str] = mapped_column(String(16), default="succeeded")
    output: Mapped[str | None] = mapped_column(Text, default=None)
    cmd: Mapped[list[str] | None] = mapped_column(JSON, default=None)
    cmd_version: Mapped[str | None] = mapped_column(String(128), default=None)
    pwd: Mapped[str | None] = mapped_column(Text, default=None)
    start_ts: Mapped[datetime | None] = mapped_column(UtcDateTime(), default=None)
    end_ts: Mapped[datetime | None] = mapped_column(UtcDateTime(), default=None)
    # ArchiveBox's ids for an adopted result, as it had them: its integer id (as text) and
    # its uuid (0.7+); None where it had none (index.json-only folders).
    archivebox_id: Mapped[str | None] = mapped_column(String(64), default=None)
    archivebox_uuid: Mapped[str | None] = mapped_column(String(36), default=None)

    __table_args__ = (Index("ix_archive_result_snapshot_extractor", "snapshot_id", "extractor"),)


class Blob(Base):
    __tablename__ = "blob"

    id: Mapped[int] = mapped_column(BlobId, primary_key=True, autoincrement=True)
    sha256: Mapped[str] = mapped_column(String(64), unique=True)
    size: Mapped[int] = mapped_column(BigInteger)
    mime_type: Mapped[str] = mapped_column(String(255), default="application/octet-stream")
    ref_count: Mapped[int] = mapped_column(Integer, default=0)
    created_at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow)
    # Set when ref_count drops to 0, cleared when it rises: gc's grace period clock.
    unreferenced_since: Mapped[datetime | None] = mapped_column(
        UtcDateTime(), default=None
    )

    __table_args__ = (
        CheckConstraint("ref_count >= 0", name="ck_blob_ref_count_nonnegative"),
        CheckConstraint("size >= 0", name="ck_blob_size_nonnegative"),
        CheckConstraint("length(sha256) = 64", name="ck_blob_sha256_length"),
        Index("ix_blob_unreferenced_since", "unreferenced_since"),
    )


class SnapshotFile(Base):
    """A file of a snapshot: `relative_path` is its path inside the snapshot's folder as the
    snapshot had it (`index.html`, `readability/content.html`, `example.com/a/index.html`
    for an adopted ArchiveBox folder; `<extractor>/<path>` for `ingest`), so every view
    shows the folder's original layout. `extractor` is metadata: which tool wrote it."""

    __tablename__ = "snapshot_file"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    snapshot_id: Mapped[str] = mapped_column(ForeignKey("snapshot.id", ondelete="CASCADE"))
    blob_id: Mapped[int] = mapped_column(ForeignKey("blob.id", ondelete="RESTRICT"))
    extractor: Mapped[str] = mapped_column(String(64))
    relative_path: Mapped[str] = mapped_column(String(1024))
    created_at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow)

    __table_args__ = (
        UniqueConstraint("snapshot_id", "relative_path", name="uq_snapshot_file_path"),
        Index("ix_snapshot_file_blob", "blob_id"),
    )


ENTRY_KINDS = ("symlink", "folder")


class SnapshotEntry(Base):
    """What a snapshot's folder held besides files: a symlink (`target` verbatim) or an
    empty folder (an extractor's output folder left empty, which pages may still link to).

    Folders and `inside` symlinks (their target resolves within the snapshot folder) are
    recreated in the views at `relative_path`; other symlinks are only recorded here and
    reported, never followed.
    """

    __tablename__ = "snapshot_entry"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    snapshot_id: Mapped[str] = mapped_column(ForeignKey("snapshot.id", ondelete="CASCADE"))
    relative_path: Mapped[str] = mapped_column(String(1024))
    kind: Mapped[str] = mapped_column(String(8))
    target: Mapped[str | None] = mapped_column(Text, default=None)
    inside: Mapped[bool] = mapped_column(Boolean, default=True)

    __table_args__ = (
        UniqueConstraint("snapshot_id", "relative_path", name="uq_snapshot_entry_path"),
        CheckConstraint("kind IN ('symlink', 'folder')", name="ck_snapshot_entry_kind"),
    )


class Store(Base):
    __tablename__ = "store"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(63), unique=True)
    kind: Mapped[str] = mapped_column(String(16))
    location: Mapped[str] = mapped_column(Text)
    codec: Mapped[str] = mapped_column(String(16))

    __table_args__ = (CheckConstraint("kind IN ('local', 's3')", name="ck_store_kind"),)


class BlobCopy(Base):
    __tablename__ = "blob_copy"

    blob_id: Mapped[int] = mapped_column(
        ForeignKey("blob.id", ondelete="CASCADE"), primary_key=True
    )
    store_id: Mapped[int] = mapped_column(
        ForeignKey("store.id", ondelete="CASCADE"), primary_key=True
    )
    status: Mapped[str] = mapped_column(String(16))
    mtime: Mapped[datetime | None] = mapped_column(UtcDateTime(), default=None)

    __table_args__ = (
        CheckConstraint(
            "status IN ('missing', 'ongoing', 'present', 'corrupted')",
            name="ck_blob_copy_status",
        ),
        # Scrub and per-store status counts walk (store, status, blob).
        Index("ix_blob_copy_store_status", "store_id", "status", "blob_id"),
    )


SESSION_KINDS = ("crawl", "warc")


class CrawlSession(Base):
    """A crawl session whose segments were ingested (`captures.segment_ingest`): its first and last
    fetch, the pages ingested so far, and its compacted file once compacted. Or (`kind` warc)
    an imported WARC file (`source`: its name as given), whose records the captures point
    into; `snapshot_id` when it is an adopted ArchiveBox snapshot's own WARC."""

    __tablename__ = "crawl_session"

    id: Mapped[str] = mapped_column(String(36), primary_key=True, default=new_id)
    started_at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow)
    ended_at: Mapped[datetime | None] = mapped_column(UtcDateTime(), default=None)
    index_dir: Mapped[str] = mapped_column(Text)  # sessions/<first day>/<id>, data-dir relative
    pages: Mapped[int] = mapped_column(Integer, default=0)
    # The session's records rewritten into one zstd JSON-lines file (data-dir relative) and
    # its offset index, both also blobs (one reference each) once compacted.
    compacted_path: Mapped[str | None] = mapped_column(Text, default=None)
    compacted_blob_id: Mapped[int | None] = mapped_column(
        ForeignKey("blob.id", ondelete="RESTRICT"), default=None)
    index_blob_id: Mapped[int | None] = mapped_column(
        ForeignKey("blob.id", ondelete="RESTRICT"), default=None)
    kind: Mapped[str] = mapped_column(String(16), default="crawl", server_default="crawl")
    source: Mapped[str | None] = mapped_column(Text, default=None)
    snapshot_id: Mapped[str | None] = mapped_column(
        ForeignKey("snapshot.id", ondelete="SET NULL", name="fk_crawl_session_snapshot"),
        default=None)

    __table_args__ = (
        Index("ix_crawl_session_started_at", "started_at"),
        Index("ix_crawl_session_snapshot", "snapshot_id"),
        CheckConstraint("kind IN ('crawl', 'warc')", name="ck_crawl_session_kind"),
    )


class CrawlSegment(Base):
    """The ledger of ingested segment files: a segment (path, sha256 of its bytes) is
    ingested once. The file itself is a blob (`blob_id`, one reference), so headers and
    redirect chains, which only it holds, are verified and replicated like any file; once
    its session is compacted the compacted file holds them, and `blob_id` is released (NULL)."""

    __tablename__ = "crawl_segment"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    path: Mapped[str] = mapped_column(String(512), unique=True)  # data-dir relative
    sha256: Mapped[str] = mapped_column(String(64))
    session_id: Mapped[str] = mapped_column(ForeignKey("crawl_session.id", ondelete="CASCADE"))
    blob_id: Mapped[int | None] = mapped_column(ForeignKey("blob.id", ondelete="RESTRICT"))
    records: Mapped[int] = mapped_column(Integer)  # whole records ingested
    rejected: Mapped[int] = mapped_column(Integer, default=0)  # records refused (reported)
    cut_bytes: Mapped[int] = mapped_column(BigInteger, default=0)  # a cut last record's bytes
    ingested_at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow)


EXCHANGE_KINDS = ("page", "request", "redirect")  # HTTP exchanges: what a URL's lookups answer
RENDERING_KINDS = ("screenshot", "dom")  # a browser page load's own: shown with its page only
CAPTURE_KINDS = (*EXCHANGE_KINDS, *RENDERING_KINDS)


class PageFetch(Base):
    """A capture: one HTTP exchange of a crawl. `kind` is `page` (the page's own response),
    `request` (a sub-request of the page: an asset), `redirect` (a hop of a redirect
    chain, `final_url` its Location), or, of a browser page load, `screenshot` (its full-page
    PNG) or `dom` (its rendered DOM), which share the page's URL and time but are no answer
    for that URL (lookups by URL keep to `EXCHANGE_KINDS`). Found by `url_hash`, the sha256
    of the crawler's canonical form of `url` (`canonical_urls`), or by `urlkey`, its SURT key
    as CDX servers order captures (`surt.urlkey`); `site` (scheme://host[:port]) serves
    prefix listings.
    A stored body is one reference to its blob (`body_blob_id`); a body the store lacked
    keeps its hash in `body_sha256` with no blob. `index_path` and
    `record_offset` locate the record (segment file, or compacted session file). `title` is
    the HTML title the crawler read from a `page` capture's body (NULL for the rest, for
    untitled pages, and for captures ingested before titles were kept)."""

    __tablename__ = "page_fetch"

    id: Mapped[int] = mapped_column(BlobId, primary_key=True, autoincrement=True)
    session_id: Mapped[str] = mapped_column(ForeignKey("crawl_session.id", ondelete="CASCADE"))
    segment_id: Mapped[int] = mapped_column(ForeignKey("crawl_segment.id", ondelete="CASCADE"))
    kind: Mapped[str] = mapped_column(String(16))
    navigation_id: Mapped[str | None] = mapped_column(String(64), default=None)
    url: Mapped[str] = mapped_column(Text)
    url_hash: Mapped[str] = mapped_column(String(64))
    site: Mapped[str] = mapped_column(String(300))
    canonical_url: Mapped[str] = mapped_column(Text)
    fetched_ms: Mapped[int] = mapped_column(BigInteger)  # epoch milliseconds (UTC)
    status_code: Mapped[int | None] = mapped_column(Integer, default=None)
    final_url: Mapped[str | None] = mapped_column(Text, default=None)
    redirects: Mapped[str | None] = mapped_column(Text, default=None)  # JSON [[url, status, location]]
    content_type: Mapped[str | None] = mapped_column(String(255), default=None)
    body_sha256: Mapped[str | None] = mapped_column(String(64), default=None)
    body_size: Mapped[int | None] = mapped_column(BigInteger, default=None)
    body_blob_id: Mapped[int | None] = mapped_column(
        ForeignKey("blob.id", ondelete="RESTRICT"), default=None)
    truncated: Mapped[bool] = mapped_column(Boolean, default=False)
    error: Mapped[str | None] = mapped_column(Text, default=None)
    depth: Mapped[int | None] = mapped_column(Integer, default=None)
    index_path: Mapped[str] = mapped_column(Text)
    record_offset: Mapped[int] = mapped_column(BigInteger)
    request_index: Mapped[int] = mapped_column(Integer, default=0)
    title: Mapped[str | None] = mapped_column(Text, default=None)  # a page's HTML <title>
    # `surt.urlkey(url)`; bytewise order on both databases, so a key prefix is a range.
    urlkey: Mapped[str] = mapped_column(URLKEY)

    __table_args__ = (
        CheckConstraint("kind IN ('page', 'request', 'redirect', 'screenshot', 'dom')",
                        name="ck_page_fetch_kind"),
        Index("ix_page_fetch_url_hash", "url_hash", "fetched_ms"),
        # Replay and CDX: a URL's captures in time, and SURT-ordered range scans, in the order
        # they are read (with `id`: PostgreSQL then never sorts a key range it misjudged).
        Index("ix_page_fetch_urlkey", "urlkey", "fetched_ms", "id"),
        Index("ix_page_fetch_session", "session_id", "fetched_ms"),
        Index("ix_page_fetch_site", "site", "fetched_ms"),
        Index("ix_page_fetch_body", "body_sha256"),
        Index("ix_page_fetch_segment", "segment_id", "record_offset"),  # compaction repoints by both
    )


CRAWL_REQUEST_STATES = ("queued", "running", "finished", "failed", "cancelled")


class CrawlRequestRow(Base):
    """One crawl of a definition, queued (by Dagster, a schedule or the command line) for the
    long-running crawler: the definition as it was when queued, who took it and when it last
    said it was alive (`heartbeat_at`), its progress while it runs and its outcome. `crawl_id`
    is the crawl's identity (its Redis keys, its frontier folder)."""

    __tablename__ = "crawl_request"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    crawl_id: Mapped[str | None] = mapped_column(String(128), unique=True, default=None)
    definition_name: Mapped[str] = mapped_column(String(64))
    definition: Mapped[dict[str, object]] = mapped_column(JSON)
    state: Mapped[str] = mapped_column(String(16), default="queued")
    requested_by: Mapped[str] = mapped_column(Text, default="")
    queued_at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow)
    claimed_by: Mapped[str | None] = mapped_column(Text, default=None)
    heartbeat_at: Mapped[datetime | None] = mapped_column(UtcDateTime(), default=None)
    started_at: Mapped[datetime | None] = mapped_column(UtcDateTime(), default=None)
    finished_at: Mapped[datetime | None] = mapped_column(UtcDateTime(), default=None)
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    progress: Mapped[dict[str, object]] = mapped_column(JSON, default=dict)
    outcome: Mapped[dict[str, object] | None] = mapped_column(JSON, default=None)

    __table_args__ = (
        Index("ix_crawl_request_state", "state", "queued_at"),
        Index("ix_crawl_request_definition", "definition_name", "queued_at"),
        CheckConstraint(
            "state IN ('queued', 'running', 'finished', 'failed', 'cancelled')",
            name="ck_crawl_request_state"),
    )


class CrawlerRow(Base):
    """A long-running crawler that takes crawl requests, and when it last said it was alive
    (it does every few seconds, busy or idle): whether anything will consume a queued crawl."""

    __tablename__ = "crawler"

    worker: Mapped[str] = mapped_column(String(255), primary_key=True)  # host:pid
    started_at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow)
    seen_at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow)
    running: Mapped[int] = mapped_column(Integer, default=0)  # crawls it runs now
    stopped_at: Mapped[datetime | None] = mapped_column(UtcDateTime(), default=None)


class CaptureQaRow(Base):
    """One check of a browser capture against its replay (`archive_pipelines.qa`): the page
    capture checked (`page_fetch_id`, kind `page`), when, the screenshots' pixel score (NULL when
    the replay gave no screenshot), the page's resources answered at capture time
    (`resources_expected`) and by the replay from the archive (`resources_replayed`), the
    missing ones (`missing`: a JSON list of URLs, at most 50), requests that left the replay
    server (`leaks`), the overall `score` in [0, 1], and why the replay failed (`error`).
    A capture checked again gets another row: the newest is its score."""

    __tablename__ = "capture_qa"

    id: Mapped[int] = mapped_column(BlobId, primary_key=True, autoincrement=True)
    page_fetch_id: Mapped[int] = mapped_column(
        BlobId, ForeignKey("page_fetch.id", ondelete="CASCADE"))
    checked_at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow)
    pixel_score: Mapped[float | None] = mapped_column(Float, default=None)
    resources_expected: Mapped[int] = mapped_column(Integer)
    resources_replayed: Mapped[int] = mapped_column(Integer)
    missing: Mapped[str] = mapped_column(Text, default="[]")  # JSON list of URLs
    leaks: Mapped[int] = mapped_column(Integer, default=0)
    score: Mapped[float] = mapped_column(Float)
    error: Mapped[str | None] = mapped_column(Text, default=None)

    __table_args__ = (
        Index("ix_capture_qa_page", "page_fetch_id", "checked_at"),
        Index("ix_capture_qa_checked", "checked_at"),
        CheckConstraint("score >= 0 AND score <= 1", name="ck_capture_qa_score"),
    )
