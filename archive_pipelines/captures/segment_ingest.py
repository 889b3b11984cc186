"""Segment ingest: a closed crawl segment becomes captures, blob references and a ledger entry.

One segment is one transaction. Before it, the segment file itself is put into the primary
blob store (durably): it alone holds the headers and redirect chains, so it is verified and
replicated like any file. The ledger (`crawl_segment`: path + sha256 of the bytes) makes a
rerun skip what is done, so a segment ingested twice, or an ingest killed at any point and
rerun, ends with the same rows and ref counts; a kill before the commit leaves at most the
segment's blob file, which the rerun finds already stored.

Records are checked field by field (`records.parse_record`); a refused record, a body the
store lacks and a cut last record are reported, never guessed at.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from archive_pipelines.blobstore import BlobStore, LocalBlobStore
from archive_pipelines.captures.record_parser import RecordRefused, parse_record
from archive_pipelines.captures.segment_files import SegmentBytes, SegmentPath
from archive_pipelines.captures.segment_source import LocalSegments, SegmentSource, segment_source
from archive_pipelines.captures.views import ViewCapture, capture_links
from archive_pipelines.catalog import Body, CaptureRow, Catalog, SegmentRows, utcnow
from archive_pipelines.counts import Counts
from archive_pipelines.sizes import human_bytes
from archive_pipelines.views import ViewFarm

SEGMENT_MIME = "application/x-ndjson"
MAX_PROBLEMS = 20  # listed per segment; the rest are counted
LOOKUPS_AT_ONCE = 8  # HEADs in flight on a remote primary (botocore pools 10 connections)


@dataclass
class SegmentReport(Counts):
    """One segment's ingest. `outcome`: ingested, already (in the ledger with these bytes),
    changed (in the ledger with other bytes: left alone) or failed (unreadable)."""

    path: str
    outcome: str
    day: str = ""
    session_id: str = ""
    records: int = 0
    rejected: int = 0
    pages: int = 0
    captures: int = 0
    stored_bodies: int = 0
    missing_bodies: int = 0
    new_blobs: int = 0
    new_body_bytes: int = 0
    duplicate_body_bytes: int = 0
    cut_bytes: int = 0
    links: int = 0  # view links made (`[crawl] views`)
    status_classes: Counter[str] = field(default_factory=Counter)
    problems: list[str] = field(default_factory=list)
    more_problems: int = 0

    def problem(self, text: str) -> None:
        if len(self.problems) < MAX_PROBLEMS:
            self.problems.append(text)
        else:
            self.more_problems += 1

    @property
    def failed(self) -> bool:
        return self.outcome in ("changed", "failed")

    def to_dict(self) -> dict[str, Any]:
        data = dict(vars(self))
        data["status_classes"] = dict(sorted(self.status_classes.items()))
        return data


STATUS_CLASSES = ("1xx", "2xx", "3xx", "4xx", "5xx", "failed")  # always in the metadata, for plots


@dataclass
class CrawlIngestReport:
    """Every segment an `ingest_crawl` looked at, and the entries under sessions/ it skipped."""

    segments: list[SegmentReport] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)

    def total(self, name: str) -> int:
        return sum(getattr(segment, name) for segment in self.segments)

    @property
    def ingested(self) -> list[SegmentReport]:
        return [s for s in self.segments if s.outcome == "ingested"]

    @property
    def failed(self) -> list[SegmentReport]:
        return [s for s in self.segments if s.failed]

    @property
    def status_classes(self) -> Counter[str]:
        total: Counter[str] = Counter()
        for segment in self.segments:
            total.update(segment.status_classes)
        return total

    def to_dict(self) -> dict[str, Any]:
        names = ("records", "rejected", "pages", "captures", "stored_bodies", "missing_bodies",
                 "new_blobs", "new_body_bytes", "duplicate_body_bytes", "cut_bytes", "links")
        return {
            "segments_ingested": len(self.ingested),
            "segments_already": sum(s.outcome == "already" for s in self.segments),
            "segments_failed": len(self.failed),
            **{name: self.total(name) for name in names},
            "status_classes": dict(sorted(self.status_classes.items())),
            "segments": [s.to_dict() for s in self.segments],
            "skipped": self.skipped,
        }

    def as_metadata(self) -> dict[str, int]:
        """The totals a run records: segments by outcome, pages, captures, bodies, and pages
        per status class (every class of STATUS_CLASSES, 0 when none)."""
        totals = self.to_dict()
        classes = totals["status_classes"]
        return {
            "segments_ingested": totals["segments_ingested"],
            "segments_already": totals["segments_already"],
            "segments_failed": totals["segments_failed"],
            "pages": totals["pages"],
            "captures": totals["captures"],
            "stored_bodies": totals["stored_bodies"],
            "new_body_bytes": totals["new_body_bytes"],
            "duplicate_body_bytes": totals["duplicate_body_bytes"],
            "rejected_records": totals["rejected"],
            "missing_bodies": totals["missing_bodies"],
            "cut_bytes": totals["cut_bytes"],
            **{f"status_{name}": classes.get(name, 0) for name in sorted({*STATUS_CLASSES, *classes})},
        }

    def problems(self) -> list[str]:
        """Every segment's problem lines, `<segment path>: <problem>`."""
        lines: list[str] = []
        for segment in self.segments:
            lines.extend(f"{segment.path}: {problem}" for problem in segment.problems)
            if segment.more_problems:
                lines.append(f"{segment.path}: ... and {segment.more_problems} more")
        return lines

    def log_lines(self) -> list[str]:
        """What a run log says: segments by outcome, pages, captures and bodies."""
        totals = self.as_metadata()
        line = (f"{totals['segments_ingested']:,} new segment(s) ingested "
                f"({totals['segments_already']:,} already in the catalog): "
                f"{totals['pages']:,} pages, {totals['captures']:,} captures; bodies "
                f"{human_bytes(totals['new_body_bytes'])} new, "
                f"{human_bytes(totals['duplicate_body_bytes'])} already stored")
        problems = {name: totals[key] for name, key in (
            ("segment(s) failed", "segments_failed"), ("record(s) refused", "rejected_records"),
            ("bod(ies) missing", "missing_bodies")) if totals[key]}
        if problems:
            line += "; " + ", ".join(f"{n:,} {name}" for name, n in problems.items())
        return [line]


class _AlreadyIngested(Exception):
    """Rolls back a transaction whose ledger insert lost to an earlier ingest."""


def pending_segments(catalog: Catalog, data_dir: Path, *, session_id: str | None = None,
                     source: SegmentSource | None = None) -> tuple[list[SegmentPath], list[str]]:
    """Segment files (on disk, or in `source`) that the ledger does not hold, and the
    entries skipped."""
    found, skipped = (source or segment_source_of_dir(data_dir)).find(session_id)
    with catalog.reading() as tx:
        done = tx.captures.ingested_paths()
    return [s for s in found if s.relative not in done], skipped


@dataclass(frozen=True)
class CapturePrimary:
    """Where crawled bodies are: the primary store (`store_id` its catalog row), and the
    view farm whose aliases every blob gets."""

    store: BlobStore
    store_id: int
    farm: ViewFarm
    views: tuple[str, ...] = ()  # views the captures appear in (`[crawl] views`)


def ingest_crawl(catalog: Catalog, primary: CapturePrimary, data_dir: Path, *,
                 session_id: str | None = None, day: str | None = None,
                 on_segment: Callable[[SegmentReport], object] | None = None,
                 source: SegmentSource | None = None) -> CrawlIngestReport:
    """Ingest every segment not yet in the ledger (of one session, of one day, or all),
    found in `source` (default: where the primary keeps them, segment_source.py).

    A segment the ledger holds whose size is no longer the size it was ingested
    with is looked at too, and reported as `changed` (its new bytes are not ingested: a
    segment is written once, so a change is damage or a file put back by hand)."""
    source = source or segment_source(primary.store, data_dir)
    found, skipped = source.find(session_id)
    with catalog.reading() as tx:
        sizes = tx.captures.ledger_sizes()
    segments = [s for s in found
                if s.relative not in sizes or _size_changed(source, s, sizes[s.relative])]
    report = CrawlIngestReport(skipped=skipped)
    for segment in segments:
        if day is not None and segment.day != day:
            continue
        done = ingest_segment(catalog, primary, segment, source=source)
        report.segments.append(done)
        if on_segment is not None:
            on_segment(done)
    return report


def _size_changed(source: SegmentSource, segment: SegmentPath, recorded: int | None) -> bool:
    if recorded is None:  # compacted: its records are in the compacted file
        return False
    size = source.size(segment.relative)
    return size is not None and size != recorded


def segment_source_of_dir(data_dir: Path) -> SegmentSource:
    """The segments under a data dir's sessions/ (a local primary's)."""
    return LocalSegments(data_dir)


def ingest_segment(catalog: Catalog, primary: CapturePrimary, segment: SegmentPath, *,
                   source: SegmentSource | None = None) -> SegmentReport:
    """Ingest one segment file (see the module docstring)."""
    report = SegmentReport(segment.relative, "failed", day=segment.day,
                           session_id=segment.session_id)
    try:
        content = (source or segment_source_of_dir(segment.root)).read(segment.relative)
    except OSError as exc:
        report.problem(f"cannot read the segment: {exc.strerror or exc}")
        return report
    with catalog.reading() as tx:
        recorded = tx.captures.ledger_entry(segment.relative)
    if recorded is not None:
        report.outcome = "already" if recorded == content.sha256 else "changed"
        if report.outcome == "changed":
            report.problem(f"ingested before with sha256 {recorded}, the file now has "
                           f"{content.sha256}: left as it is")
        return report
    rows = _segment_rows(primary, segment, content, report=report, catalog=catalog)
    put = primary.store.put_bytes(content.data)  # durable before the catalog refers to it
    assert put.sha256 == content.sha256
    for sha in (content.sha256, *rows.bodies):  # every blob has its alias (idempotent)
        primary.farm.aliases.ensure(sha, primary.store.local_path(sha))
    try:
        with catalog.transaction() as tx:
            done = tx.captures.record_segment(rows, primary_store_id=primary.store_id, now=utcnow())
            if not done.ingested:
                raise _AlreadyIngested
    except _AlreadyIngested:
        report.outcome = "already"
        return report
    report.outcome = "ingested"
    report.captures = done.captures
    report.stored_bodies = done.stored_bodies
    report.new_blobs = done.new_blobs
    report.new_body_bytes = done.new_body_bytes
    report.duplicate_body_bytes = done.duplicate_body_bytes
    report.status_classes = done.status_classes
    if primary.views and done.segment_id is not None:  # after the commit, like ingest's links
        report.links = link_captures(catalog, primary, segment_id=done.segment_id)
    return report


def link_captures(catalog: Catalog, primary: CapturePrimary, *, segment_id: int | None = None
                  ) -> int:
    """Make (or fix) the view links of one segment's captures, or of every capture; the
    number of links checked. None without a local primary (symlink views need its files)."""
    store = primary.store
    if not isinstance(store, LocalBlobStore):
        return 0
    with catalog.reading() as tx:
        rows = tx.captures.view_captures(segment_id=segment_id)
    files, folders = capture_links(primary.views, (ViewCapture(*row) for row in rows))
    for link, (sha, ext) in files.items():
        primary.farm.ensure_file_link(link, sha, store.object_path(sha), ext=ext)
    for link, target in folders.items():
        primary.farm.ensure_folder_link(link, target)
    return len(files) + len(folders)


def _segment_rows(primary: CapturePrimary, segment: SegmentPath, content: SegmentBytes,
                  *, report: SegmentReport, catalog: Catalog) -> SegmentRows:
    """The catalog rows of a segment's whole records; refused records, missing bodies and a
    cut tail go to `report`."""
    captures: list[tuple[int, CaptureRow]] = []
    wanted: dict[str, CaptureRow] = {}
    first = last = None
    for offset, line in content.lines():
        report.records += 1
        try:
            record = parse_record(line, session_id=segment.session_id)
        except RecordRefused as exc:
            report.rejected += 1
            report.problem(f"record at byte {offset}: {exc}")
            continue
        report.pages += 1
        first = record.fetched_ms if first is None else min(first, record.fetched_ms)
        last = record.fetched_ms if last is None else max(last, record.fetched_ms)
        for capture in record.captures:
            captures.append((offset, capture))
            if capture.body_sha256 is not None:
                wanted.setdefault(capture.body_sha256, capture)
    if content.cut_bytes:
        report.cut_bytes = content.cut_bytes
        report.problem(f"the last {content.cut_bytes} bytes (from byte {content.whole}) are not "
                       "a whole record (the segment was cut mid-write): not ingested")
    bodies: dict[str, Body] = {}
    remote = not primary.store.is_local_folder
    sizes = _remote_sizes(catalog, primary, list(wanted)) if remote else {}
    for sha, capture in wanted.items():
        size = sizes[sha] if remote else _stored_size(primary, sha)
        if size is None:
            missing = sum(c.body_sha256 == sha for _, c in captures)
            report.missing_bodies += missing
            report.problem(f"body sha256:{sha} ({capture.url[:200]}) is not in the store: "
                           f"{missing} capture(s) recorded without it")
            continue
        bodies[sha] = Body(sha, size if size >= 0 else capture.body_size or 0,
                           (capture.content_type or "application/octet-stream")[:255])
    now_ms = int(utcnow().timestamp() * 1000)
    return SegmentRows(
        path=segment.relative, sha256=content.sha256, session_id=segment.session_id,
        index_dir=f"sessions/{segment.day}/{segment.session_id}",
        segment_blob=Body(content.sha256, len(content.data), SEGMENT_MIME),
        captures=captures, bodies=bodies, records=report.records, rejected=report.rejected,
        cut_bytes=content.cut_bytes, pages=report.pages,
        first_ms=now_ms if first is None else first, last_ms=now_ms if last is None else last)


def _remote_sizes(catalog: Catalog, primary: CapturePrimary, hashes: list[str]
                  ) -> dict[str, int | None]:
    """The size of each body a remote primary holds, None for those it lacks. A body the
    catalog already references and records present there costs no request (gc never takes
    a referenced blob); any other is one HEAD (several at once: a request's round trip, not
    its work, is what costs; -1: present, its size the record's)."""
    with catalog.reading() as tx:
        known = tx.blobs.blobs_by_sha256(hashes)
        copies = tx.copies.copies_of([row.id for row in known.values() if row.ref_count > 0])
    sizes: dict[str, int | None] = {
        sha: row.size for sha, row in known.items()
        if (state := copies.get(row.id, {}).get(primary.store_id)) is not None
        and state.status == "present"}
    unknown = [sha for sha in hashes if sha not in sizes]
    with ThreadPoolExecutor(LOOKUPS_AT_ONCE) as pool:
        present = list(pool.map(primary.store.exists, unknown))
    sizes.update((sha, -1 if there else None) for sha, there in zip(unknown, present, strict=True))
    return sizes


def _stored_size(primary: CapturePrimary, sha256: str) -> int | None:
    """The body's size in the primary (-1: present, size not known without decoding); None
    when the store lacks it. One HEAD on an S3 primary: nothing is recorded present that is
    not in the bucket."""
    path = primary.store.local_path(sha256)
    if path is None:
        return -1 if primary.store.exists(sha256) else None
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    return st.st_size if primary.store.codec == "raw" else -1
