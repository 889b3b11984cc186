"""`compact-crawls`: rewrite old crawl sessions into one compressed, indexed file each."""

from __future__ import annotations

import json
from datetime import timedelta

import click

from archive_pipelines.captures.compaction import CompactionReport, compact_sessions
from archive_pipelines.captures.segment_ingest import CapturePrimary
from archive_pipelines.captures.short_ids import resolve_session_id
from archive_pipelines.cli.context import CliContext
from archive_pipelines.cli.option_types import DAYS
from archive_pipelines.cli.progress_bar import progress_bar
from archive_pipelines.sizes import human_bytes


@click.command("compact-crawls")
@click.option("--older-than", "days", type=DAYS, default=None, metavar="DAYS",
              help="Sessions whose last fetch is older than DAYS (default: "
                   "crawl.compact_after_days).")
@click.option("--session", "session_id", metavar="ID",
              help="Only this session (if old enough): its id, or the start of it.")
@click.option("--dry-run", is_flag=True,
              help="Say which sessions would be compacted and which are left, and why; "
                   "change nothing.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.pass_obj
def compact_crawls_command(obj: CliContext, days: float | None, session_id: str | None,
                           *, dry_run: bool, as_json: bool) -> None:
    """Rewrite old crawl sessions into one zstd JSON-lines file each, plus an offset index
    (sessions/compacted/); captures then point into it. The segment files are removed only
    after the compacted file has been read back and checked record by record, and stored in
    the blob store. Safe to interrupt and rerun. A session left as it is (too young, still
    being crawled, not ingested yet) is listed with the reason. Exit 1 when a session could
    not be compacted, or --session names none."""
    if session_id is not None:
        session_id = resolve_session_id(obj.catalog, session_id)
    parts = obj.parts()
    older = timedelta(days=obj.settings.crawl.compact_after_days if days is None else days)
    primary = CapturePrimary(parts.primary.store, parts.primary.store_id, parts.views.farm,
                             parts.views.crawl)
    with progress_bar("compacting", "session", disable=as_json or dry_run) as bar:
        report = compact_sessions(parts.catalog, primary, obj.settings.data_dir,
                                  older_than=older, session_id=session_id, dry_run=dry_run,
                                  on_session=lambda _s: bar.update(1))
    if as_json:
        click.echo(json.dumps({"dry_run": dry_run, **report.to_dict()}, indent=2))
    else:
        _echo_report(report, dry_run=dry_run)
    if report.failed:
        raise click.exceptions.Exit(1)


def _echo_report(report: CompactionReport, *, dry_run: bool) -> None:
    """One line per session (what was done, or why it was left), then the totals."""
    if dry_run:
        click.echo("dry run: nothing is changed")
    for done in report.sessions:
        if done.outcome == "skipped":
            click.echo(f"{done.session_id}  skipped: {'; '.join(done.problems)}")
            continue
        if done.outcome == "would compact":
            click.echo(f"{done.session_id}  would compact {done.segments:,} segment(s), "
                       f"{human_bytes(done.bytes_in)}")
            continue
        click.echo(f"{done.session_id}  {done.outcome:<9} {done.segments:,} segment(s), "
                   f"{done.records:,} records, {human_bytes(done.bytes_in)} -> "
                   f"{human_bytes(done.bytes_out)}, {done.removed_files:,} file(s) removed")
        for problem in done.problems:
            click.echo(f"  {problem}", err=True)
    skipped = sum(s.outcome == "skipped" for s in report.sessions)
    left = f"; {skipped:,} session(s) skipped (above)" if skipped else ""
    if dry_run:
        would = [s for s in report.sessions if s.outcome == "would compact"]
        click.echo(f"{len(would):,} session(s) would be compacted "
                   f"({human_bytes(sum(s.bytes_in for s in would))} of segments){left}")
        return
    compacted = sum(s.outcome == "compacted" for s in report.sessions)
    click.echo(f"{compacted:,} session(s) compacted: {human_bytes(report.total('bytes_in'))} "
               f"-> {human_bytes(report.total('bytes_out'))}{left}")
