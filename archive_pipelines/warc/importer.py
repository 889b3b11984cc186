"""A WARC file into the deduplicated store: the file kept as it is (an original, one blob),
each response's body a blob, each HTTP capture a row of the catalog pointing at its record.

The file is stored first (copied, never moved or changed); its records are then read from the
stored copy (in an object store, from a local file with the same bytes: `readable_warc`), so
a capture's (file, offset) names bytes the store keeps. Records go to the
catalog in batches, one transaction each, as a crawl segment would: the batch's ledger row
(`imports/<sha256>/<layout>/<start>-<end>`, in `crawl_segment`) references the stored file, its
captures reference their bodies. A rerun starts after the last committed batch; a file whose
closing row (`.../end`) exists is done. Bodies are written before their batch's transaction
(synced first): a crash between leaves at most unreferenced blobs, which `gc` collects.

A revisit record resolves to the body it stands for: an earlier record of the same file (by
payload digest; a rerun recalls those of the batches committed before it), else a capture of
its `WARC-Refers-To-Target-URI` at its `WARC-Refers-To-Date` (an earlier import, or a crawl),
else a body whose sha256 the digest is. One that resolves to nothing is reported and kept as
a failed capture that says so.
"""

from __future__ import annotations

import uuid
import zlib
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from archive_pipelines.blobstore import BlobStore
from archive_pipelines.captures.record_parser import url_key
from archive_pipelines.captures.segment_ingest import CapturePrimary
from archive_pipelines.catalog import Body, CaptureRow, Catalog, SegmentRows, utcnow
from archive_pipelines.counts import Counts, add_line
from archive_pipelines.settings import Settings
from archive_pipelines.storage.file_workers import may_start_processes
from archive_pipelines.warc import import_spans
from archive_pipelines.warc.collector import fewer_collections
from archive_pipelines.warc.digests import parse_digest
from archive_pipelines.warc.import_record import Body as ReadBody
from archive_pipelines.warc.import_record import ReadRecord, RecordRefused, Revisit, warc_date_ms
from archive_pipelines.warc.import_spans import Item, SpanReader, StoredBody, put_body, read_items
from archive_pipelines.warc.readable_warc import GivenFile, ReadableWarc, readable_warc
from archive_pipelines.warc.warc_files import BrokenSpan, Layout, detect_layout, iter_records

IMPORT_NAMESPACE = uuid.UUID("5b0c8f4e-2f1e-4c36-9a55-1d7a4f0e9c21")
BATCH_RECORDS = 10_000  # records per transaction (and per syncfs of the store)
_WRITERS = 4  # threads writing bodies (file creation lets go of the GIL)
# An object store's put waits on the network, not the disk: more puts at once (within the S3
# client's 10 pooled connections), and the file is read here rather than by worker processes,
# each of which puts one body at a time (on moto_server, 1,000 8 KB bodies: 2 processes 42/s,
# 4 threads 66/s, 8 threads 92/s).
OBJECT_STORE_WRITERS = 8
_IN_FLIGHT = 64  # bodies handed to them and not yet written, at most


def import_session_id(sha256: str) -> str:
    """The session of an imported file: the same file is the same session, on every run."""
    return str(uuid.uuid5(IMPORT_NAMESPACE, sha256))


def ledger_prefix(sha256: str) -> str:
    return f"imports/{sha256}/"


@dataclass
class ImportReport(Counts):
    """What an import did with its files and records."""

    files: int = 0
    files_done_before: int = 0  # imported by an earlier run: nothing to do
    records: int = 0  # read this run
    captures: int = 0
    pages: int = 0
    revisits: int = 0
    unresolved_revisits: int = 0
    refused: int = 0  # records not imported as good (digest mismatch, cut short ...)
    broken_spans: int = 0  # stretches of a file holding no readable record
    other_records: int = 0  # request, metadata, warcinfo, non-http: kept in the stored file only
    reread_spans: int = 0  # parallel reading: spans read again (a false record start cut them)
    new_bodies: int = 0
    new_body_bytes: int = 0
    file_bytes: int = 0  # of the imported files as stored
    problems: list[str] = field(default_factory=list)

    def problem(self, line: str) -> None:
        add_line(self.problems, line)

    @property
    def failed(self) -> bool:
        return bool(self.refused or self.broken_spans or self.unresolved_revisits)


@dataclass(frozen=True)
class ImportTarget:
    """Where an import goes: the catalog, the primary store (its id in the catalog, and the
    view farm whose aliases every blob gets), and the data dir (temp files); with the
    settings, a large file is read by `[import] processes` worker processes."""

    catalog: Catalog
    primary: CapturePrimary
    data_dir: Path
    settings: Settings | None = None  # given: a large file is read by worker processes

    @property
    def store(self) -> BlobStore:
        return self.primary.store

    @property
    def store_id(self) -> int:
        return self.primary.store_id

    def ensure_aliases(self, hashes: Iterable[str]) -> None:
        """Every blob has its typed alias in the view farm (idempotent)."""
        for sha in hashes:
            self.primary.farm.aliases.ensure(sha, self.store.local_path(sha))


@dataclass
class _Batch:
    start: int
    captures: list[tuple[int, CaptureRow]] = field(default_factory=list)
    bodies: dict[str, Body] = field(default_factory=dict)
    records: int = 0
    refused: int = 0
    pages: int = 0
    first_ms: int | None = None
    last_ms: int | None = None
    writes: list[Future[tuple[bool, int]]] = field(default_factory=list)  # the batch's bodies being written
    waited: int = 0  # writes already waited for

    def add(self, offset: int, row: CaptureRow) -> None:
        self.captures.append((offset, row))
        self.pages += row.kind == "page"
        self.first_ms = row.fetched_ms if self.first_ms is None else min(self.first_ms, row.fetched_ms)
        self.last_ms = row.fetched_ms if self.last_ms is None else max(self.last_ms, row.fetched_ms)


def digest_sha256(digest: str | None) -> str | None:
    """The hex sha256 a `sha256:` WARC digest (base32, base16 or base64) names, else None."""
    parsed = parse_digest(digest)
    return parsed[1].hex() if parsed is not None and parsed[0] == "sha256" else None


class WarcImport:
    """One stored WARC file's records into the catalog (see the module docstring)."""

    def __init__(self, target: ImportTarget, *, sha256: str, size: int, readable: ReadableWarc,
                 source: str, snapshot_id: str | None = None,
                 pages: dict[str, str | None] | None = None, report: ImportReport,
                 on_record: Callable[[int], None] | None = None) -> None:
        self._target = target
        self._sha256 = sha256
        self._readable = readable
        self._size = size
        self._source = source
        self._snapshot_id = snapshot_id
        self._pages = pages or {}
        self._report = report
        self._on_record = on_record
        self._session_id = import_session_id(sha256)
        self._seen: dict[str, tuple[str, int, str | None]] = {}  # payload digest -> body
        self._spool = target.data_dir / "tmp" / "warc-import"
        self._queued: set[str] = set()  # bodies handed to the writers (or written) this run
        self._parallel = False  # read (and bodies stored) by worker processes
        # A local store is asked whether it has a body before the body goes to a writer; an
        # object store's put asks itself (HEAD, then PUT if absent): one request less.
        self._local_store = target.store.local_path(sha256) is not None

    def run(self) -> None:
        prefix = ledger_prefix(self._sha256)
        done = self._target.catalog.imports.ledger_paths(prefix)
        if any(path.endswith("/end") for path in done):
            self._report.files_done_before += 1
            return
        path = self._readable.path
        layout = detect_layout(path)
        start = max((int(p.rsplit("-", 1)[1]) for p in done if "-" in p.rsplit("/", 1)[1]),
                    default=0)
        if start:
            self._recall(path, layout, start)
        self._spool.mkdir(parents=True, exist_ok=True)
        # Bodies are written by a few threads (file creation lets go of the GIL) while this
        # one reads on, synced once per batch, not each.
        writers = _WRITERS if self._local_store else OBJECT_STORE_WRITERS
        with self._target.store.deferred_sync(), fewer_collections(), \
                ThreadPoolExecutor(writers, thread_name_prefix="warc-put") as self._writers:
            self._read(path, layout, start)

    def _recall(self, path: Path, layout: Layout, start: int) -> None:
        """On a rerun, the payload digests of the bodies committed before `start`, as a run
        from the top would have seen them: a later revisit that names its body by payload
        digest alone (as wget writes them) then resolves as it would have."""
        bodies = self._target.catalog.imports.bodies_by_offset(ledger_prefix(self._sha256))
        records = iter_records(path, layout, http_requests=False)
        try:
            for item in records:
                if isinstance(item, BrokenSpan):
                    continue
                if item.offset >= start:
                    break
                digest = item.record.rec_headers.get_header("WARC-Payload-Digest")
                body = bodies.get(item.offset)
                if digest and body and item.record.rec_type in ("response", "resource"):
                    self._seen.setdefault(digest, body)
        finally:
            records.close()

    def _read(self, path: Path, layout: Layout, start: int) -> None:
        batch = _Batch(start)
        for item, stored in self._items(path, layout, start):
            if isinstance(item, BrokenSpan):
                self._report.broken_spans += 1
                batch.refused += 1
                self._report.problem(f"{self._source}: offset {item.offset}: {item.reason}")
                continue
            offset, read = item
            self._report.records += 1
            if self._on_record is not None:
                self._on_record(1)
            if batch.records >= BATCH_RECORDS:
                self._commit(batch, layout, end=offset)
                batch = _Batch(offset)
            batch.records += 1
            self._add(batch, offset, read, stored=stored)
        self._commit(batch, layout, end=self._stored_end(path, layout), final=True)

    def _items(self, path: Path, layout: Layout, start: int
               ) -> Iterator[tuple[Item, StoredBody | None]]:
        """The records from `start` on: read here (bodies then stored by the writer threads),
        or, for a large file in a local store, by worker processes that store the bodies too."""
        settings = self._target.settings
        processes = 1 if settings is None else settings.imports.worker_processes
        if (settings is None or processes < 2 or not may_start_processes() or layout is Layout.WHOLE_GZIP
                or not self._local_store or self._size - start < import_spans.MIN_PARALLEL_BYTES):
            for item in read_items(path, layout, start=start, spool=self._spool,
                                   pages=self._pages):
                yield item, None
            return
        self._parallel = True
        reader = SpanReader(settings=settings, store=self._target.store, sha256=self._sha256,
                            path=self._readable.path, layout=layout, size=self._size,
                            spool=self._spool, pages=self._pages, processes=processes)
        try:
            yield from reader.items(start)
        finally:
            self._report.reread_spans += reader.rereads

    def _add(self, batch: _Batch, offset: int, read: ReadRecord | RecordRefused, *,
             stored: StoredBody | None) -> None:
        if isinstance(read, RecordRefused):
            batch.refused += 1
            self._report.refused += 1
            self._report.problem(f"{self._source}: offset {offset}: {read}")
            return
        if read.capture is None:
            self._report.other_records += 1
            return
        row = read.capture
        if read.revisit is not None:
            self._report.revisits += 1
            row = self._resolve(row, read.revisit, offset=offset)
        elif read.body is not None:
            body = read.body
            if stored is None:
                self._store_body(body, batch)
            elif stored.created and stored.sha256 not in self._queued:
                self._queued.add(stored.sha256)  # two workers may both have written it
                self._report.new_bodies += 1
                self._report.new_body_bytes += stored.size
            kept = (body.sha256, body.size, row.content_type)
            if read.payload_digest:
                self._seen.setdefault(read.payload_digest, kept)
        if row.body_sha256 is not None:
            batch.bodies[row.body_sha256] = Body(row.body_sha256, row.body_size or 0,
                                                 _mime(row.content_type))
        batch.add(offset, row)
        self._report.captures += 1
        self._report.pages += row.kind == "page"

    def _store_body(self, body: ReadBody, batch: _Batch) -> None:
        """Hand a body the store lacks to the writers (at most `_IN_FLIGHT` at once: memory
        stays bounded); its batch commits once it is written."""
        store = self._target.store
        if body.sha256 in self._queued or (self._local_store and store.exists(body.sha256)):
            body.close()
            return
        self._queued.add(body.sha256)
        while len(batch.writes) - batch.waited >= _IN_FLIGHT:
            batch.writes[batch.waited].result()
            batch.waited += 1
        batch.writes.append(self._writers.submit(self._put, body))

    def _put(self, body: ReadBody) -> tuple[bool, int]:
        """In a writer thread: the body into the store; (whether this wrote it, its size)."""
        return put_body(self._target.store, body), body.size

    def _resolve(self, row: CaptureRow, revisit: Revisit, *, offset: int) -> CaptureRow:
        found = self._seen.get(revisit.payload_digest or "")
        catalog = self._target.catalog
        if found is None and revisit.refers_to_uri and revisit.refers_to_date:
            key = url_key(revisit.refers_to_uri.strip("<>"))
            try:
                at = warc_date_ms(revisit.refers_to_date)
            except RecordRefused:
                key = None
            if key is not None:
                found = catalog.imports.body_at(key[1], from_ms=at - at % 1000,
                                                to_ms=at - at % 1000 + 999)
        if found is None:  # (the digest is decoded only here: most revisits resolve above)
            sha = digest_sha256(revisit.payload_digest)
            if sha is not None:
                found = catalog.imports.body_with_digest(sha)
        if found is None:
            self._report.unresolved_revisits += 1
            refers = f"{revisit.refers_to_uri or '?'} at {revisit.refers_to_date or '?'}"
            self._report.problem(f"{self._source}: offset {offset}: revisit of {row.url[:200]} "
                                 f"refers to {refers} (payload {revisit.payload_digest or '?'}): "
                                 "no such body in this file, the catalog or the store")
            return row._replace(status_code=None, body_sha256=None, body_size=None,
                                error=f"unresolved revisit of {refers}"[:2000])
        return row._replace(body_sha256=found[0], body_size=found[1],
                            content_type=row.content_type or found[2])

    def _stored_end(self, path: Path, layout: Layout) -> int:
        if layout is Layout.WHOLE_GZIP:
            return -1  # decompressed length unknown without reading: `end` marks it done
        return path.stat().st_size

    def _commit(self, batch: _Batch, layout: Layout, *, end: int, final: bool = False) -> None:
        """The batch's rows in one transaction (bodies synced first); with `final`, the
        file's closing row too."""
        store = self._target.store
        self._readable.check()  # the records were read from the bytes stored
        for write in batch.writes:  # every body of the batch written (a failure raises here)
            created, size = write.result()
            if created:
                self._report.new_bodies += 1
                self._report.new_body_bytes += size
        if self._parallel:  # a worker syncs what it stored (and its aliases) before it answers
            store.sync_pending()  # the stored WARC itself, written without its own fsync
            self._target.ensure_aliases([self._sha256])
        else:
            store.sync()
            self._target.ensure_aliases([self._sha256, *batch.bodies])
        catalog = self._target.catalog
        base = f"{ledger_prefix(self._sha256)}{layout.value}"
        segment_blob = Body(self._sha256, self._size, "application/warc")
        now = utcnow()
        first = batch.first_ms if batch.first_ms is not None else int(now.timestamp() * 1000)
        last = batch.last_ms if batch.last_ms is not None else first
        with catalog.transaction() as tx:
            if batch.records or batch.refused:
                tx.captures.record_segment(SegmentRows(
                    path=f"{base}/{batch.start}-{end}", sha256=self._sha256,
                    session_id=self._session_id, index_dir=ledger_prefix(self._sha256).rstrip("/"),
                    segment_blob=segment_blob, captures=batch.captures, bodies=batch.bodies,
                    records=batch.records, rejected=batch.refused, cut_bytes=0,
                    pages=batch.pages, first_ms=first, last_ms=last),
                    primary_store_id=self._target.store_id, now=now)
            if final:
                tx.captures.record_segment(SegmentRows(
                    path=f"{base}/end", sha256=self._sha256, session_id=self._session_id,
                    index_dir=ledger_prefix(self._sha256).rstrip("/"), segment_blob=segment_blob,
                    captures=[], bodies={}, records=0, rejected=0, cut_bytes=0, pages=0,
                    first_ms=first, last_ms=last), primary_store_id=self._target.store_id, now=now)
            tx.imports.mark_warc_session(self._session_id, source=self._source,
                                         snapshot_id=self._snapshot_id)


def _mime(content_type: str | None) -> str:
    mime = (content_type or "").split(";", 1)[0].strip().lower()
    return mime[:255] or "application/octet-stream"


_HEAD = 64 * 1024  # a WARC's first record starts in its first bytes


def is_warc(path: Path) -> bool:
    """Whether the file starts as a WARC does (`WARC/`), plain or gzipped."""
    with open(path, "rb") as handle:
        return starts_as_warc(handle.read(_HEAD))


def starts_as_warc(head: bytes) -> bool:
    """Whether a file's first bytes start as a WARC does (`WARC/`), plain or gzipped."""
    if head.startswith(b"\x1f\x8b"):
        try:
            head = zlib.decompressobj(31).decompress(head, 16)
        except zlib.error:
            return False
    return head.startswith(b"WARC/")


def import_warc_file(path: Path, *, target: ImportTarget, report: ImportReport,
                     source: str | None = None, snapshot_id: str | None = None,
                     pages: dict[str, str | None] | None = None,
                     on_record: Callable[[int], None] | None = None) -> str | None:
    """Store `path` as it is and import its records; its sha256, or None (reported) when it
    is no WARC file."""
    name = source or str(path)
    if not is_warc(path):
        report.files += 1
        _not_a_warc(report, name)
        return None
    given = GivenFile.of(path)  # read in place of the stored blob where that has no local file
    with target.store.deferred_sync():  # synced before the first batch refers to it
        put = target.store.put_file(path)
    report.file_bytes += put.size
    import_stored_warc(put.sha256, put.size, target=target, report=report, source=name,
                       snapshot_id=snapshot_id, pages=pages, on_record=on_record, given=given)
    return put.sha256


def import_stored_warc(sha256: str, size: int, *, target: ImportTarget, report: ImportReport,
                       source: str, snapshot_id: str | None = None,
                       pages: dict[str, str | None] | None = None,
                       on_record: Callable[[int], None] | None = None,
                       given: GivenFile | None = None) -> bool:
    """Import the records of a WARC file the primary store holds (an adopted snapshot's own
    `warc/*.warc.gz`, or one just stored from `given`), read where it is in a local store,
    else from `given` or a local copy; False (reported) when it is no WARC."""
    report.files += 1
    done = target.catalog.imports.ledger_paths(ledger_prefix(sha256))
    if any(path.endswith("/end") for path in done):  # (without fetching an object store's blob)
        report.files_done_before += 1
        return True
    if given is None and not starts_as_warc(target.store.read_range(sha256, 0, _HEAD)):
        _not_a_warc(report, source)
        return False
    with readable_warc(target.store, sha256, given=given,
                       spool_dir=target.data_dir / "tmp" / "warc-import") as readable:
        WarcImport(target, sha256=sha256, size=size, readable=readable, source=source,
                   snapshot_id=snapshot_id, pages=pages, report=report,
                   on_record=on_record).run()
    return True


def _not_a_warc(report: ImportReport, source: str) -> None:
    report.broken_spans += 1
    report.problem(f"{source}: not a WARC file (it does not start with WARC/, plain or gzipped)")
