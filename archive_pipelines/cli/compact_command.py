"""`compact-crawls`: rewrite old crawl sessions into one compressed, indexed file each."""

from __future__ import annotations

import json
from datetime import timedelta

import click

from archive_pipelines.captures.compaction import compact_sessions
from archive_pipelines.captures.ingest import CaptureStore
from archive_pipelines.captures.segment_files import canonical_session_id
from archive_pipelines.cli.context import CliContext
from archive_pipelines.cli.progress import progress_bar
from archive_pipelines.errors import ArchiveError
from archive_pipelines.sizes import human_bytes


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
