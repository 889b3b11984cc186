"""`index-warcs`: the WARCs inside snapshots (an adopted collection's `warc/*.warc.gz`) into
captures, for collections adopted before adoption did it."""

from __future__ import annotations

import json

import click

from archive_pipelines.archive_error import NotFound
from archive_pipelines.cli.context import CliContext
from archive_pipelines.cli.progress_bar import progress_bar
from archive_pipelines.migration.adopted_warcs import warc_target
from archive_pipelines.warc.importer import ImportReport
from archive_pipelines.warc.snapshot_warcs import SnapshotWarcs, index_snapshot_warcs


@click.command("index-warcs")
@click.option("--snapshot", "refs", multiple=True, metavar="ID_OR_TIMESTAMP",
              help="Only this snapshot's WARCs (repeatable; default: every snapshot's).")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.pass_obj
def index_warcs_command(obj: CliContext, refs: tuple[str, ...], *, as_json: bool) -> None:
    """Index the WARCs inside snapshots (warc/*.warc, warc/*.warc.gz) so `captures URL` finds
    what they hold.

    For a collection adopted before adoption indexed them; adoption (`update`) now does it
    itself. Each file is read where the blob store keeps it, never copied or changed; its
    captures are linked to their snapshot. A file indexed before is skipped, so a rerun is
    harmless and an interrupted one goes on where it stopped. Exit 1 when a WARC had
    unreadable records: each is listed with its file and offset, the rest is indexed."""
    ids = _snapshot_ids(obj, refs) if refs else None
    parts = obj.parts()
    target = warc_target(parts.catalog, parts.primary, parts.views, layout=parts.layout)
    report = ImportReport()
    with progress_bar("indexing", "record", disable=as_json) as bar:

        def record(count: int) -> None:
            bar.update(count)

        def file(source: str) -> None:
            bar.set_postfix_str(source[-40:], refresh=False)

        done = index_snapshot_warcs(target, snapshot_ids=ids, report=report, on_file=file,
                                    on_record=record)
    if as_json:
        click.echo(json.dumps({"warcs": done.found, "indexed": done.indexed,
                               "with_problems": done.with_problems, **report.counts(),
                               "problems": report.problems}, indent=2))
    else:
        _echo(done, report)
    if report.failed:
        raise click.exceptions.Exit(1)


def _snapshot_ids(obj: CliContext, refs: tuple[str, ...]) -> list[str]:
    ids: list[str] = []
    with obj.catalog.reading() as tx:
        for ref in refs:
            found = tx.snapshots.find_snapshots(ref)
            if not found:
                raise NotFound(f"no snapshot with id or timestamp {ref!r}")
            ids.extend(found)
    return list(dict.fromkeys(ids))


def _echo(done: SnapshotWarcs, report: ImportReport) -> None:
    for line in report.problems:
        click.echo(f"problem: {line}", err=True)
    click.echo(f"{done.found:,} snapshot WARC file(s): {done.indexed:,} indexed now, "
               f"{report.files_done_before:,} indexed before; {report.records:,} records read")
    click.echo(f"{report.captures:,} captures ({report.pages:,} pages, {report.revisits:,} "
               f"revisits, {report.unresolved_revisits:,} unresolved); {report.new_bodies:,} "
               "new bodies, the rest were in the store already")
    if done.with_problems:
        click.echo(f"{len(done.with_problems):,} WARC file(s) with unreadable records (above); "
                   "what could be read is indexed", err=True)
