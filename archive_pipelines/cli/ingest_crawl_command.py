"""`ingest-crawl`: closed crawl segments become captures in the catalog."""

from __future__ import annotations

import json

import click

from archive_pipelines.archive_error import ArchiveError
from archive_pipelines.captures.segment_files import canonical_session_id
from archive_pipelines.captures.segment_ingest import (
    CapturePrimary,
    SegmentReport,
    ingest_crawl,
    pending_segments,
)
from archive_pipelines.captures.segment_source import segment_source
from archive_pipelines.captures.segment_spool import upload_spooled_segments
from archive_pipelines.cli.context import CliContext
from archive_pipelines.cli.progress_bar import progress_bar
from archive_pipelines.sizes import human_bytes


@click.command("ingest-crawl")
@click.option("--session", "session_id", metavar="ID", help="Only this crawl session's segments.")
@click.option("--all", "every", is_flag=True, help="Every crawl session's segments.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.pass_obj
def ingest_crawl_command(obj: CliContext, session_id: str | None, *, every: bool,
                         as_json: bool) -> None:
    """Record closed crawl segments (sessions/<day>/<session>/*.jsonl) in the catalog: one
    capture per fetch, the bodies as blob references, the segment file as a blob. Segments
    already ingested are skipped, so it is safe to rerun (and to run beside a crawl).
    Exit 1 when a record, body or segment could not be ingested as written."""
    if (session_id is None) == (not every):
        raise ArchiveError("say which segments: --session ID or --all")
    if session_id is not None and canonical_session_id(session_id) is None:
        raise ArchiveError(f"bad --session {session_id[:100]!r}: a session id is a lower-case UUID")
    parts = obj.parts()
    root = obj.settings.data_dir
    source = segment_source(parts.primary.store, root)
    # An S3 primary: segments a crawler on this machine could not upload yet go first.
    spooled = upload_spooled_segments(source, root)
    if spooled.error:
        click.echo(f"  {spooled.error}: {spooled.left:,} segment(s) of this machine stay in "
                   f"{root / 'sessions'}", err=True)
    pending, _skipped = pending_segments(parts.catalog, root, session_id=session_id,
                                         source=source)
    with progress_bar("ingesting segments", "segment", total=len(pending),
                      disable=as_json) as bar:
        def advance(segment: SegmentReport) -> None:
            bar.update(1)
            bar.set_postfix(pages=segment.pages, refresh=False)

        primary = CapturePrimary(parts.primary.store, parts.primary.store_id,
                                 parts.views.farm, parts.views.crawl)
        report = ingest_crawl(parts.catalog, primary, root, session_id=session_id,
                              on_segment=advance, source=source)
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
    if (spooled.error or report.failed or totals["rejected"] or totals["missing_bodies"]
            or totals["cut_bytes"]):
        raise click.exceptions.Exit(1)
