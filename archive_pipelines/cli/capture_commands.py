"""`ingest-crawl` (crawl segments -> captures in the catalog) and `captures` (lookups)."""

from __future__ import annotations

import json
import time
from dataclasses import asdict
from datetime import UTC, datetime, timedelta
from pathlib import Path

import click

from archive_pipelines.captures.compaction import CompactionError, compact_sessions
from archive_pipelines.captures.ingest import (
    CaptureStore,
    SegmentReport,
    ingest_crawl,
    pending_segments,
)
from archive_pipelines.captures.lookup import find_body, find_session, find_url, note, when_ms
from archive_pipelines.captures.record_files import read_record
from archive_pipelines.captures.segment_files import canonical_session_id
from archive_pipelines.catalog.captures import Capture
from archive_pipelines.catalog.sessions import Catalog
from archive_pipelines.cli.context import CliContext
from archive_pipelines.cli.progress import human_bytes, progress_bar
from archive_pipelines.errors import ArchiveError


@click.command("ingest-crawl")
@click.option("--session", "session_id", metavar="ID", help="Only this crawl session's segments.")
@click.option("--all", "every", is_flag=True, help="Every crawl session's segments.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.pass_obj
def ingest_crawl_command(obj: CliContext, session_id: str | None, every: bool,
                         as_json: bool) -> None:
    """Record closed crawl segments (sessions/<day>/<session>/*.jsonl) in the catalog: one
    capture per fetch, the bodies as blob references, the segment file as a blob. Segments
    already ingested are skipped, so it is safe to rerun (and to run beside a crawl).
    Exit 1 when a record, body or segment could not be ingested as written."""
    if (session_id is None) == (not every):
        raise ArchiveError("say which segments: --session ID or --all")
    if session_id is not None and canonical_session_id(session_id) is None:
        raise ArchiveError(f"bad --session {session_id[:100]!r}: a session id is a lower-case UUID")
    storage = obj.storage()
    root = obj.settings.data_dir
    pending, _skipped = pending_segments(storage.catalog, root, session_id=session_id)
    with progress_bar("ingesting segments", "segment", total=len(pending),
                      disable=as_json) as bar:
        def advance(segment: SegmentReport) -> None:
            bar.update(1)
            bar.set_postfix(pages=segment.pages, refresh=False)

        store = CaptureStore(storage.primary.store, storage.primary.store_id,
                             storage.views.farm, storage.views.crawl)
        report = ingest_crawl(storage.catalog, store, root, session_id=session_id,
                              on_segment=advance)
    totals = report.to_dict()
    if as_json:
        click.echo(json.dumps(totals, indent=2))
    else:
        click.echo(f"segments ingested {totals['segments_ingested']:,} "
                   f"(already {totals['segments_already']:,}, failed {totals['segments_failed']:,})")
        click.echo(f"pages {totals['pages']:,}, captures {totals['captures']:,}, "
                   f"bodies stored {totals['stored_bodies']:,} "
                   f"(new {human_bytes(totals['new_body_bytes'])}, "
                   f"duplicate {human_bytes(totals['duplicate_body_bytes'])})")
        classes = ", ".join(f"{k} {v:,}" for k, v in totals["status_classes"].items())
        click.echo(f"status {classes or '-'}")
        for segment in report.segments:
            for problem in segment.problems:
                click.echo(f"  {segment.path}: {problem}", err=True)
            if segment.more_problems:
                click.echo(f"  {segment.path}: ... and {segment.more_problems} more", err=True)
        for line in report.skipped:
            click.echo(f"  skipped {line}", err=True)
    if (report.failed or totals["rejected"] or totals["missing_bodies"] or totals["cut_bytes"]):
        raise click.exceptions.Exit(1)


@click.command("captures")
@click.argument("url", required=False)
@click.option("--prefix", is_flag=True, help="Every URL under URL (a site or a path).")
@click.option("--from", "from_", metavar="TIME",
              help="Not before TIME: unix seconds, YYYYMMDDhhmmss (or its start) or ISO 8601.")
@click.option("--to", metavar="TIME", help="Not after TIME (a partial time: its end).")
@click.option("--session", "session_id", metavar="ID", help="A crawl session's pages instead.")
@click.option("--requests", "every_request", is_flag=True,
              help="With --session: every capture, sub-requests and redirects too.")
@click.option("--sha256", "body", metavar="HASH", help="The captures whose body has this hash.")
@click.option("--limit", type=click.IntRange(min=1), default=None, help="At most N captures.")
@click.option("--json", "as_json", is_flag=True, help="Print the captures as JSON.")
@click.option("--records", "with_records", is_flag=True,
              help="With --json: each capture's whole crawl record too (headers, redirects), "
                   "read from its segment or compacted session file.")
@click.pass_obj
def captures_command(obj: CliContext, url: str | None, prefix: bool, from_: str | None,
                     to: str | None, session_id: str | None, every_request: bool,
                     body: str | None, limit: int | None, as_json: bool,
                     with_records: bool) -> None:
    """List the captures of URL, newest first: when, status, body sha256 and size, session.

    URL matches on the crawler's canonical form (`HTTP://Example.com:80/a?b=1&a=2#x` finds
    `http://example.com/a?a=2&b=1`); http and https are different URLs. Redirect hops,
    sub-requests, failed fetches and truncated bodies are captures too, marked as such.
    Exit 1 when nothing matches."""
    if sum(x is not None for x in (url, session_id, body)) != 1:
        raise ArchiveError("give one of: URL, --session ID, --sha256 HASH")
    catalog = Catalog(obj.engine)  # lookups need neither the store nor its workers
    started = time.perf_counter()
    heading = ""
    if url is not None:
        canonical, found = find_url(
            catalog, url, prefix=prefix, limit=limit,
            from_ms=None if from_ is None else when_ms(from_),
            to_ms=None if to is None else when_ms(to, end=True))
        heading = f"{'under ' if prefix else ''}{canonical}"
    elif session_id is not None:
        if canonical_session_id(session_id) is None:
            raise ArchiveError(f"bad --session {session_id[:100]!r}: a session id is a lower-case UUID")
        found = find_session(catalog, session_id, every_request=every_request, limit=limit)
        heading = f"of session {session_id}"
    else:
        assert body is not None
        found = find_body(catalog, body, limit=limit)
        heading = f"with body sha256 {body}"
    lookup_ms = (time.perf_counter() - started) * 1000
    if as_json:
        rows = [_as_dict(c) for c in found]
        if with_records:
            for row, capture in zip(rows, found, strict=True):
                row["record"] = _record(obj.settings.data_dir, capture)
        click.echo(json.dumps({"query": heading, "lookup_ms": round(lookup_ms, 3),
                               "captures": rows}, indent=2))
    else:
        for capture in found:
            click.echo(_line(capture))
        click.echo(f"{len(found):,} capture(s) {heading} ({lookup_ms:.1f} ms)")
    if not found:
        raise click.exceptions.Exit(1)


def _when(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def _line(capture: Capture) -> str:
    status = "-" if capture.status_code is None else str(capture.status_code)
    size = "-" if capture.body_size is None else human_bytes(capture.body_size)
    sha = capture.body_sha256 or "-" * 64
    extra = note(capture)
    return (f"{_when(capture.fetched_ms)}  {status:>3}  {capture.kind:<8} {sha}  {size:>9}  "
            f"{capture.session_id}  {capture.url}" + (f"  ({extra})" if extra else ""))


def _record(data_dir: Path, capture: Capture) -> object:
    try:
        return read_record(data_dir, capture.index_path, capture.record_offset)
    except (OSError, ValueError, CompactionError) as exc:
        return {"error": f"cannot read {capture.index_path} at {capture.record_offset}: {exc}"}


def _as_dict(capture: Capture) -> dict[str, object]:
    data = asdict(capture)
    data["timestamp"] = _when(capture.fetched_ms)
    data["note"] = note(capture)
    return data


@click.command("compact-crawls")
@click.option("--older-than", "days", type=click.FloatRange(min=0), default=None, metavar="DAYS",
              help="Sessions whose last fetch is older than DAYS (default: "
                   "crawl.compact_after_days).")
@click.option("--session", "session_id", metavar="ID", help="Only this session (if old enough).")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.pass_obj
def compact_crawls_command(obj: CliContext, days: float | None, session_id: str | None,
                           as_json: bool) -> None:
    """Rewrite old crawl sessions into one zstd JSON-lines file each, plus an offset index
    (sessions/compacted/); captures then point into it. The segment files are removed only
    after the compacted file has been read back and checked record by record, and stored in
    the blob store. Safe to interrupt and rerun. Exit 1 when a session could not be compacted."""
    if session_id is not None and canonical_session_id(session_id) is None:
        raise ArchiveError(f"bad --session {session_id[:100]!r}: a session id is a lower-case UUID")
    storage = obj.storage()
    older = timedelta(days=obj.settings.crawl.compact_after_days if days is None else days)
    store = CaptureStore(storage.primary.store, storage.primary.store_id, storage.views.farm,
                         storage.views.crawl)
    with progress_bar("compacting", "session", disable=as_json) as bar:
        report = compact_sessions(storage.catalog, store, obj.settings.data_dir,
                                  older_than=older, session_id=session_id,
                                  on_session=lambda _s: bar.update(1))
    if as_json:
        click.echo(json.dumps(report.to_dict(), indent=2))
    else:
        for done in report.sessions:
            click.echo(f"{done.session_id}  {done.outcome:<9} {done.segments:,} segment(s), "
                       f"{done.records:,} records, {human_bytes(done.bytes_in)} -> "
                       f"{human_bytes(done.bytes_out)}, {done.removed_files:,} file(s) removed")
            for problem in done.problems:
                click.echo(f"  {problem}", err=True)
        compacted = sum(s.outcome == "compacted" for s in report.sessions)
        click.echo(f"{compacted:,} session(s) compacted: {human_bytes(report.total('bytes_in'))} "
                   f"-> {human_bytes(report.total('bytes_out'))}")
    if report.failed:
        raise click.exceptions.Exit(1)
