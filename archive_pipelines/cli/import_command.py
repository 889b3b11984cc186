"""`import-warc`: WARC and WACZ files into the deduplicated store."""

from __future__ import annotations

import json
from pathlib import Path

import click

from archive_pipelines.captures.segment_ingest import CapturePrimary
from archive_pipelines.cli.context import CliContext
from archive_pipelines.cli.progress_bar import progress_bar
from archive_pipelines.sizes import human_bytes
from archive_pipelines.warc.import_run import import_sources, run_import
from archive_pipelines.warc.importer import ImportReport, ImportTarget


@click.command("import-warc")
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.pass_obj
def import_warc_command(obj: CliContext, paths: tuple[Path, ...], *, as_json: bool) -> None:
    """Import WARC and WACZ files: each stored as it is, every body once, every HTTP capture
    looked up by `captures`.

    WARC 1.0/1.1 (gzip per record, whole-file gzip or plain) and WACZ packages, and every one
    under a folder given. Each file is stored as it is (an original);
    each response's body is stored once, decoded, deduplicated against the whole store, and
    becomes a capture that `captures URL` finds. Payload digests are checked; revisit records
    resolve to the body they refer to. Safe to interrupt and rerun (a file imported before is
    skipped). Exit 1 when any record was refused, a stretch of a file was unreadable or a
    revisit did not resolve: each is listed with its file and offset, the rest is imported."""
    files = import_sources(paths)
    parts = obj.parts()
    target = ImportTarget(parts.catalog, CapturePrimary(
        parts.primary.store, parts.primary.store_id, parts.views.farm, parts.views.crawl),
        obj.settings.data_dir, settings=obj.settings)
    with progress_bar("importing", "record", disable=as_json) as bar:

        def record(count: int) -> None:
            bar.update(count)

        def file(path: Path) -> None:
            bar.set_postfix_str(path.name[-40:], refresh=False)

        report = run_import(files, target=target, on_record=record, on_file=file)
    if as_json:
        click.echo(json.dumps({**report.counts(), "problems": report.problems}, indent=2))
    else:
        _echo(report)
    if report.failed:
        raise click.exceptions.Exit(1)


def _echo(report: ImportReport) -> None:
    for line in report.problems:
        click.echo(f"problem: {line}", err=True)
    done_before = f" ({report.files_done_before:,} imported before)" if report.files_done_before else ""
    click.echo(f"{report.files:,} file(s){done_before}, {human_bytes(report.file_bytes)} stored as "
               f"they are; {report.records:,} records read")
    click.echo(f"{report.captures:,} captures ({report.pages:,} pages, {report.revisits:,} "
               f"revisits, {report.unresolved_revisits:,} unresolved); {report.other_records:,} "
               "other records kept in the stored files")
    click.echo(f"{report.new_bodies:,} new bodies ({human_bytes(report.new_body_bytes)}); the "
               "rest were in the store already")
    if report.failed:
        click.echo(f"{report.refused:,} record(s) refused, {report.broken_spans:,} unreadable "
                   "stretch(es) (above)", err=True)
