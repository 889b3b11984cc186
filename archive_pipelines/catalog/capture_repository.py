"""Crawl sessions, segments and the captures (page fetches) they recorded."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, NamedTuple

from sqlalchemy import Select, case, func, insert, literal, select, true, update
from sqlalchemy.orm import Session

from archive_pipelines.catalog.models import (
    EXCHANGE_KINDS,
    RENDERING_KINDS,
    Blob,
    CrawlSegment,
    CrawlSession,
    PageFetch,
    UtcDateTime,
)
from archive_pipelines.catalog.ref_counts import (
    ApplyReport,
    apply_ref_deltas,
    get_or_create_blobs,
    mark_primary_present,
    table_of,
)
from archive_pipelines.catalog.repository_base import Repository, _reads, _writes
from archive_pipelines.catalog.row_sets import BOOL, INT, TEXT, row_set
from archive_pipelines.catalog.statements import insert_ignore
from archive_pipelines.surt import urlkey


class CaptureRow(NamedTuple):
    """One capture as the catalog stores it (see `models.PageFetch`)."""

    kind: str  # page | request | redirect | screenshot | dom
    navigation_id: str | None
    url: str
    url_hash: str
    site: str
    canonical_url: str
    fetched_ms: int
    status_code: int | None
    final_url: str | None
    redirects: str | None  # JSON [[url, status, location], ...] of the fetch's chain
    content_type: str | None
    body_sha256: str | None
    body_size: int | None
    truncated: bool
    error: str | None
    depth: int | None
    request_index: int
    title: str | None = None  # the page's HTML title (a `page` capture's only)


_CAPTURE_COLUMNS = [
    ("kind", TEXT), ("navigation_id", TEXT), ("url", TEXT), ("url_hash", TEXT), ("site", TEXT),
    ("canonical_url", TEXT), ("fetched_ms", INT), ("status_code", INT), ("final_url", TEXT),
    ("redirects", TEXT), ("content_type", TEXT), ("body_sha256", TEXT), ("body_size", INT),
    ("truncated", BOOL), ("error", TEXT), ("depth", INT), ("request_index", INT), ("title", TEXT),
    ("record_offset", INT), ("body_blob_id", INT), ("urlkey", TEXT),
]


class Body(NamedTuple):
    """A blob a segment references (`BlobEntry`): a body, or the segment file itself."""

    sha256: str
    size: int
    mime_type: str


@dataclass(frozen=True)
class SegmentRows:
    """What one segment file adds to the catalog."""

    path: str  # data-dir relative: the ledger's key
    sha256: str
    session_id: str
    index_dir: str  # sessions/<day>/<session>
    segment_blob: Body
    captures: Sequence[tuple[int, CaptureRow]]  # (record offset, capture)
    bodies: dict[str, Body]  # the bodies present in the store, by sha256
    records: int
    rejected: int
    cut_bytes: int
    pages: int
    first_ms: int
    last_ms: int


@dataclass
class RecordedSegment:
    """What `record_segment` did: `ingested` False when the ledger already held the path."""

    ingested: bool
    segment_id: int | None = None
    captures: int = 0
    stored_bodies: int = 0  # captures holding a reference to their body
    new_blobs: int = 0
    new_body_bytes: int = 0  # bodies first recorded by this segment
    duplicate_body_bytes: int = 0  # references to bodies recorded before
    status_classes: Counter[str] = field(default_factory=Counter)


_CAPTURE_NAMES = ["session_id", "segment_id", "index_path",
                  *(name for name, _kind in _CAPTURE_COLUMNS)]


def _insert_captures(session: Session, rows: SegmentRows, segment_id: int,
                     values: list[tuple[object, ...]]) -> None:
    """The segment's captures into `page_fetch` (`values`: `_CAPTURE_COLUMNS` rows)."""
    table = table_of(PageFetch)
    dialect = session.get_bind().dialect
    if dialect.name == "sqlite":
        # One prepared INSERT run per row by the driver, in C: the row set's JSON had to be
        # encoded here, then parsed by SQLite once per column of each row (json_extract).
        quote = dialect.identifier_preparer.quote
        statement = (f"INSERT INTO {quote(table.name)} "
                     f"({', '.join(quote(table.c[name].name) for name in _CAPTURE_NAMES)}) "
                     f"VALUES ({', '.join('?' * len(_CAPTURE_NAMES))})")
        head = (rows.session_id, segment_id, rows.path)
        session.connection().exec_driver_sql(statement, [head + row for row in values])
        return
    src = row_set(session, _CAPTURE_COLUMNS, values)
    session.execute(insert(table).from_select(
        _CAPTURE_NAMES,
        select(literal(rows.session_id), literal(segment_id), literal(rows.path),
               *(src.c[name] for name, _kind in _CAPTURE_COLUMNS)).where(true())))


def _ensure_session(session: Session, rows: SegmentRows) -> None:
    first = datetime.fromtimestamp(rows.first_ms / 1000, UTC)
    last = datetime.fromtimestamp(rows.last_ms / 1000, UTC)
    session.execute(
        insert_ignore(session)(table_of(CrawlSession)).values(
            id=rows.session_id, started_at=first, ended_at=last, index_dir=rows.index_dir,
            pages=0)
        .on_conflict_do_nothing(index_elements=["id"]))


def _widen_session(session: Session, rows: SegmentRows) -> None:
    first = literal(datetime.fromtimestamp(rows.first_ms / 1000, UTC), UtcDateTime())
    last = literal(datetime.fromtimestamp(rows.last_ms / 1000, UTC), UtcDateTime())
    table = table_of(CrawlSession)
    session.execute(update(table).where(table.c.id == rows.session_id).values(
        started_at=case((first < table.c.started_at, first), else_=table.c.started_at),
        ended_at=case((table.c.ended_at.is_(None), last), (last > table.c.ended_at, last),
                      else_=table.c.ended_at),
        pages=table.c.pages + rows.pages))


def status_class(capture: CaptureRow) -> str:
    """`2xx`..`5xx`, `1xx`, or `failed` (no response)."""
    if capture.status_code is None:
        return "failed"
    return f"{capture.status_code // 100}xx"


@dataclass(frozen=True)
class Capture:
    """A capture as a lookup lists it."""

    id: int
    kind: str
    url: str
    fetched_ms: int
    status_code: int | None
    body_sha256: str | None
    body_size: int | None
    stored: bool  # the body is a blob of the store (False: failed, redirect, or missing)
    truncated: bool
    error: str | None
    session_id: str
    final_url: str | None
    content_type: str | None
    index_path: str
    record_offset: int
    title: str | None  # a page's HTML title; None for other captures and untitled pages
    urlkey: str  # its URL's SURT key (`surt.urlkey`)
    request_index: int  # its fetch in the record's `requests` (0: the page's own)

    @property
    def unchanged(self) -> bool:
        """A 304 Not Modified to a conditional request, kept with the earlier body it
        stands for (a crawl of a site again, or an imported server-not-modified revisit)."""
        return self.status_code == 304 and self.body_sha256 is not None

    @property
    def replay_status(self) -> int:
        """The status a replay answers with: an unchanged capture's is that of the 200
        whose body it kept."""
        return 200 if self.unchanged else self.status_code or 200


def select_captures() -> Select[Any]:
    """The columns of `Capture`, in its order (add the conditions)."""
    query: Select[Any] = select(PageFetch.id, PageFetch.kind, PageFetch.url, PageFetch.fetched_ms,
                  PageFetch.status_code, PageFetch.body_sha256, PageFetch.body_size,
                  PageFetch.body_blob_id.is_not(None), PageFetch.truncated, PageFetch.error,
                  PageFetch.session_id, PageFetch.final_url, PageFetch.content_type,
                  PageFetch.index_path, PageFetch.record_offset,
                  PageFetch.title, PageFetch.urlkey,
                  PageFetch.request_index)  # type: ignore[assignment]
    return query


def _window(query: Select[Any], *, from_ms: int | None = None, to_ms: int | None = None,
            limit: int | None = None) -> Select[Any]:
    if from_ms is not None:
        query = query.where(PageFetch.fetched_ms >= from_ms)
    if to_ms is not None:
        query = query.where(PageFetch.fetched_ms <= to_ms)
    query = query.order_by(PageFetch.fetched_ms.desc(), PageFetch.id.desc())
    return query if limit is None else query.limit(limit)


def read_captures(session: Session, query: Select[Any]) -> list[Capture]:
    """The rows of a `select_captures()` query."""
    return [Capture(*row) for row in session.connection().execute(query)]


@dataclass(frozen=True)
class SessionRow:
    id: str
    started_at: datetime
    ended_at: datetime | None
    pages: int
    segments: int
    compacted_path: str | None


@dataclass(frozen=True)
class SegmentLedgerRow:
    id: int
    path: str
    sha256: str
    blob_id: int | None


class AlreadyCompacted(Exception):
    """Another compaction recorded this session first."""


class CaptureRepository(Repository):
    """Crawl sessions, their segments and captures; lookups and compaction."""

    @_reads
    def ledger_entry(self, session: Session, path: str) -> str | None:
        """The sha256 the ledger recorded for a segment path (None: not ingested)."""
        return session.scalar(select(CrawlSegment.sha256).where(CrawlSegment.path == path))

    @_reads
    def ingested_paths(self, session: Session) -> set[str]:
        """Every segment path the ledger holds."""
        return set(session.scalars(select(CrawlSegment.path)))

    @_reads
    def ledger_sizes(self, session: Session) -> dict[str, int | None]:
        """{segment path: its size as ingested} (None once compacted: its blob is released)."""
        query = (select(CrawlSegment.path, Blob.size)
                 .outerjoin(Blob, Blob.id == CrawlSegment.blob_id))
        return {str(path): (None if size is None else int(size)) for path, size in session.execute(query)}

    @_writes
    def record_segment(self, session: Session, rows: SegmentRows, *, primary_store_id: int,
                       now: datetime) -> RecordedSegment:
        """Record a segment in the caller's transaction: the session (made or widened), the
        ledger entry, blob rows (present on the primary) and one reference per stored body and
        for the segment file, and the captures (each filed under `surt.urlkey` of its URL).
        When the ledger already has the path (ingested before, or by a concurrent ingest that
        won the insert), nothing but the blob rows."""
        _ensure_session(session, rows)  # the ledger row refers to it
        blobs = [rows.segment_blob, *rows.bodies.values()]
        report = ApplyReport()
        blob_ids = get_or_create_blobs(session, blobs, now, report)
        segment_id = session.scalar(
            insert_ignore(session)(table_of(CrawlSegment)).values(
                path=rows.path, sha256=rows.sha256, session_id=rows.session_id,
                blob_id=blob_ids[rows.segment_blob.sha256], records=rows.records,
                rejected=rows.rejected, cut_bytes=rows.cut_bytes, ingested_at=now)
            .on_conflict_do_nothing(index_elements=["path"]).returning(table_of(CrawlSegment).c.id))
        if segment_id is None:  # ingested before (or by a concurrent ingest): change nothing
            return RecordedSegment(ingested=False)
        _widen_session(session, rows)
        done = RecordedSegment(ingested=True, segment_id=segment_id, captures=len(rows.captures),
                               new_blobs=report.new_blobs)
        deltas: Counter[int] = Counter({blob_ids[rows.segment_blob.sha256]: 1})
        counted_new: set[str] = set()
        values: list[tuple[object, ...]] = []
        for offset, capture in rows.captures:
            if capture.kind not in RENDERING_KINDS:  # no HTTP exchange: no status class
                done.status_classes[status_class(capture)] += 1
            body_id = None
            if capture.body_sha256 is not None and capture.body_sha256 in rows.bodies:
                body_id = blob_ids[capture.body_sha256]
                deltas[body_id] += 1
                done.stored_bodies += 1
                size = rows.bodies[capture.body_sha256].size
                if capture.body_sha256 in report.new_blob_hashes and capture.body_sha256 not in counted_new:
                    counted_new.add(capture.body_sha256)
                    done.new_body_bytes += size
                else:
                    done.duplicate_body_bytes += size
            values.append((*capture, offset, body_id, urlkey(capture.url)))
        if values:
            _insert_captures(session, rows, segment_id, values)
        apply_ref_deltas(session, dict(deltas), now)
        mark_primary_present(session, blobs, blob_ids, store_id=primary_store_id, now=now,
                             report=report)
        return done

    @_reads
    def captures_by_url(self, session: Session, url_hash: str, *, from_ms: int | None = None,
                        to_ms: int | None = None, limit: int | None = None) -> list[Capture]:
        """A URL's captures (by the sha256 of its canonical form), newest first: its HTTP
        exchanges, never a page's screenshot or DOM (`renderings_of` finds those)."""
        query = select_captures().where(PageFetch.url_hash == url_hash,
                                        PageFetch.kind.in_(EXCHANGE_KINDS))
        return read_captures(session, _window(query, from_ms=from_ms, to_ms=to_ms, limit=limit))

    @_reads
    def captures_by_prefix(self, session: Session, site: str, canonical_prefix: str, *,
                           from_ms: int | None = None, to_ms: int | None = None,
                           limit: int | None = None) -> list[Capture]:
        """Captures of a site (`scheme://host[:port]`) whose canonical URL starts with
        `canonical_prefix`, newest first (HTTP exchanges, as `captures_by_url`)."""
        query = select_captures().where(PageFetch.site == site, PageFetch.kind.in_(EXCHANGE_KINDS))
        if canonical_prefix != site:
            query = query.where(func.substr(PageFetch.canonical_url, 1, len(canonical_prefix))
                                == canonical_prefix)
        return read_captures(session, _window(query, from_ms=from_ms, to_ms=to_ms, limit=limit))

    @_reads
    def captures_of_session(self, session: Session, session_id: str, *, pages_only: bool = True,
                            limit: int | None = None) -> list[Capture]:
        """A session's pages (or every capture), newest first."""
        query = select_captures().where(PageFetch.session_id == session_id)
        if pages_only:
            query = query.where(PageFetch.kind == "page")
        return read_captures(session, _window(query, limit=limit))

    @_reads
    def renderings_of(self, session: Session, page_ids: Sequence[int]) -> dict[int, list[Capture]]:
        """{page capture id: its browser page load's `screenshot` and `dom` captures} of the
        pages among `page_ids` that have any: the captures of the same record (segment and
        offset)."""
        found: dict[int, list[Capture]] = {}
        if not page_ids:
            return found
        page = table_of(PageFetch).alias("page")
        for start in range(0, len(page_ids), 500):
            query = (select_captures().add_columns(page.c.id)
                     .join(page, (page.c.segment_id == PageFetch.segment_id)
                           & (page.c.record_offset == PageFetch.record_offset))
                     .where(page.c.id.in_(page_ids[start:start + 500]), page.c.kind == "page",
                            PageFetch.kind.in_(RENDERING_KINDS))
                     .order_by(page.c.id, PageFetch.id))
            for *row, page_id in session.connection().execute(query):
                found.setdefault(int(page_id), []).append(Capture(*row))
        return found

    @_reads
    def captures_of_body(self, session: Session, sha256: str, *, limit: int | None = None) -> list[Capture]:
        """The captures whose body has this sha256, newest first."""
        query = select_captures().where(PageFetch.body_sha256 == sha256)
        return read_captures(session, _window(query, limit=limit))

    @_reads
    def crawl_session(self, session: Session, session_id: str) -> SessionRow | None:
        row = session.execute(
            select(CrawlSession.id, CrawlSession.started_at, CrawlSession.ended_at,
                   CrawlSession.pages, CrawlSession.compacted_path)
            .where(CrawlSession.id == session_id)).first()
        if row is None:
            return None
        segments = session.scalar(select(func.count()).select_from(CrawlSegment)
                                  .where(CrawlSegment.session_id == session_id)) or 0
        return SessionRow(row[0], row[1], row[2], int(row[3]), int(segments), row[4])

    @_reads
    def ingest_shortfalls(self, session: Session) -> dict[str, int]:
        """What ingested segments left out: refused records, cut tails (bytes), captures whose
        body the store lacked; and the segments with any of these."""
        refused, cut, flawed = session.execute(select(
            func.coalesce(func.sum(CrawlSegment.rejected), 0),
            func.coalesce(func.sum(CrawlSegment.cut_bytes), 0),
            func.count().filter((CrawlSegment.rejected > 0) | (CrawlSegment.cut_bytes > 0)))).one()
        missing = session.scalar(select(func.count()).select_from(PageFetch).where(
            PageFetch.body_sha256.is_not(None), PageFetch.body_blob_id.is_(None))) or 0
        return {"rejected_records": int(refused), "cut_bytes": int(cut),
                "missing_bodies": int(missing), "segments_with_problems": int(flawed)}

    @_reads
    def view_captures(self, session: Session, *, segment_id: int | None = None
                      ) -> list[tuple[int, str, int, str, str, str | None]]:
        """(id, session id, fetched_ms, url, body sha256, content type) of the captures the
        views show (a page or sub-request with a stored 2xx body), of one segment or all,
        oldest first."""
        query = (select(PageFetch.id, PageFetch.session_id, PageFetch.fetched_ms, PageFetch.url,
                        PageFetch.body_sha256, PageFetch.content_type)
                 .where(PageFetch.kind.in_(("page", "request")),
                        PageFetch.status_code.between(200, 299),
                        PageFetch.body_blob_id.is_not(None)))
        if segment_id is not None:
            query = query.where(PageFetch.segment_id == segment_id)
        rows = session.connection().execute(query.order_by(PageFetch.fetched_ms, PageFetch.id))
        return [(int(i), str(s), int(ms), str(u), str(h), t) for i, s, ms, u, h, t in rows]

    @_reads
    def segments_of_session(self, session: Session, session_id: str) -> list[SegmentLedgerRow]:
        """A session's ingested segments, in the order the crawler wrote them (path order)."""
        rows = session.execute(
            select(CrawlSegment.id, CrawlSegment.path, CrawlSegment.sha256, CrawlSegment.blob_id)
            .where(CrawlSegment.session_id == session_id))
        found = [SegmentLedgerRow(int(i), str(p), str(s), b) for i, p, s, b in rows]
        return sorted(found, key=lambda row: (row.path.rsplit("/", 1)[-1], row.path))

    @_reads
    def compactable_sessions(self, session: Session, *, ended_before: datetime,
                             session_id: str | None = None) -> list[tuple[str, str | None]]:
        """(id, compacted_path) of sessions whose last fetch is before `ended_before` (or just
        `session_id`): those not compacted yet, and those compacted (their originals may still
        need removing)."""
        query = select(CrawlSession.id, CrawlSession.compacted_path).where(
            CrawlSession.ended_at < ended_before, CrawlSession.kind == "crawl")
        if session_id is not None:
            query = query.where(CrawlSession.id == session_id)
        return [(str(i), p) for i, p in session.execute(query.order_by(CrawlSession.started_at))]

    @_reads
    def young_sessions(self, session: Session, *, ended_since: datetime, session_id: str | None = None
                       ) -> list[tuple[str, datetime | None]]:
        """(id, last fetch) of the sessions not compacted whose last fetch is not before
        `ended_since` (or unknown): too young to compact yet."""
        query = select(CrawlSession.id, CrawlSession.ended_at).where(
            CrawlSession.compacted_path.is_(None), CrawlSession.kind == "crawl",
            (CrawlSession.ended_at >= ended_since) | CrawlSession.ended_at.is_(None))
        if session_id is not None:
            query = query.where(CrawlSession.id == session_id)
        return [(str(i), ended) for i, ended in session.execute(query.order_by(CrawlSession.started_at))]

    @_writes
    def record_compaction(self, session: Session, *, session_id: str, compacted_path: str,
                          compacted: Body, index: Body, ordinals: Sequence[tuple[int, int, int]],
                          primary_store_id: int, now: datetime) -> None:
        """In the caller's transaction: the session's captures point into its compacted file
        (`ordinals`: segment id, byte offset in the segment, record ordinal), the compacted
        file and its index are blobs it references once each, and the segments' own blob
        references are released. AlreadyCompacted if the session was compacted meanwhile."""
        table = table_of(CrawlSession)
        report = ApplyReport()
        blob_ids = get_or_create_blobs(session, [compacted, index], now, report)
        changed = session.execute(
            update(table).where(table.c.id == session_id, table.c.compacted_path.is_(None))
            .values(compacted_path=compacted_path, compacted_blob_id=blob_ids[compacted.sha256],
                    index_blob_id=blob_ids[index.sha256]))
        if not getattr(changed, "rowcount", 0):
            raise AlreadyCompacted(session_id)
        deltas: Counter[int] = Counter()
        deltas[blob_ids[compacted.sha256]] += 1
        deltas[blob_ids[index.sha256]] += 1
        if ordinals:
            src = row_set(session, [("seg", INT), ("off", INT), ("ord", INT)], list(ordinals))
            fetches = table_of(PageFetch)
            session.execute(
                update(fetches)
                .where(fetches.c.segment_id == src.c.seg, fetches.c.record_offset == src.c.off)
                .values(index_path=compacted_path, record_offset=src.c.ord))
        segments = table_of(CrawlSegment)
        for (blob_id,) in session.execute(
                select(segments.c.blob_id).where(segments.c.session_id == session_id,
                                                 segments.c.blob_id.is_not(None))):
            deltas[int(blob_id)] -= 1
        session.execute(update(segments).where(segments.c.session_id == session_id)
                        .values(blob_id=None))
        apply_ref_deltas(session, dict(deltas), now)
        mark_primary_present(session, [compacted, index], blob_ids, store_id=primary_store_id,
                             now=now, report=report)
