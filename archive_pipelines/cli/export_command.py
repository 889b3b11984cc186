"""`export-warc`: captures out as a WARC 1.1 file or a WACZ package."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import click

from archive_pipelines.cli.context import CliContext
from archive_pipelines.cli.progress_bar import progress_bar
from archive_pipelines.sizes import human_bytes
from archive_pipelines.warc.export_run import ExportOutcome, ExportRequest, check_target, run_export
from archive_pipelines.warc.export_scope import export_scope


@click.command("export-warc")
@click.argument("out", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--session", "sessions", multiple=True, metavar="ID",
              help="Only this crawl session (its id or the start of it); repeatable.")
@click.option("--url-prefix", metavar="URL",
              help="Only URLs under this one (the crawler's canonical form, as `captures "
                   "--prefix`): a site (`http://example.com`) or a path.")
@click.option("--from", "from_", metavar="TIME",
              help="Captures not before TIME: unix seconds, YYYYMMDDhhmmss (or its start) or "
                   "ISO 8601.")
@click.option("--to", metavar="TIME", help="Captures not after TIME (a partial time: its end).")
@click.option("--self-contained", is_flag=True,
              help="Every body in full: no revisit records (for readers that cannot resolve "
                   "them; larger).")
@click.option("--wacz", is_flag=True,
              help="Write a WACZ package (OUT ends in .wacz): the WARC, a CDXJ index, the page "
                   "list and a datapackage with every file's sha256.")
@click.option("--overwrite", is_flag=True, help="Replace OUT if it exists.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.pass_obj
def export_warc_command(obj: CliContext, out: Path, *, sessions: tuple[str, ...],
                        url_prefix: str | None, from_: str | None, to: str | None,
                        self_contained: bool, wacz: bool, overwrite: bool,
                        as_json: bool) -> None:
    """Write the captures (or those of a session, URL prefix or time window) to a WARC 1.1
    file or a WACZ package.

    Every capture, or those of --session / --url-prefix / --from / --to, to OUT: a request
    and a response record per HTTP exchange, a body already written in the file as a revisit
    record (unless --self-contained), a metadata record per page and per failed fetch.
    Bodies are stored decoded, so each response's headers are rewritten to describe the bytes
    written (README, "WARC and WACZ"). OUT appears only once complete. Exit 1 when a capture
    could not be exported (its body missing from the store): the rest is written and each
    missing one is listed."""
    settings = obj.settings
    request = ExportRequest(out=out, scope=export_scope(
        obj.catalog, sessions=sessions, url_prefix=url_prefix, from_time=from_, to_time=to),
        self_contained=self_contained, wacz=wacz, operator=settings.export.operator,
        gzip_level=settings.export.gzip_level, overwrite=overwrite,
        processes=settings.export.worker_processes)
    check_target(request)  # a bad OUT fails before any work
    parts = obj.parts()
    total = parts.catalog.exports.count_in_scope(request.scope)
    request = replace(request, captures=total)
    with progress_bar("exporting", "capture", total=total, disable=as_json) as bar:

        def progress(count: int) -> None:
            bar.update(count)

        outcome = run_export(request, catalog=parts.catalog, store=parts.primary.store,
                             settings=settings,
                             data_dir=settings.data_dir, on_progress=progress)
    if as_json:
        click.echo(json.dumps(_as_dict(outcome), indent=2))
    else:
        _echo(outcome)
    if outcome.report.problems:
        raise click.exceptions.Exit(1)


def _as_dict(outcome: ExportOutcome) -> dict[str, object]:
    report = outcome.report
    found: dict[str, object] = {"path": str(outcome.path), **report.counts(),
                                "digest_seconds": round(report.digest_seconds, 3),
                                "problems": report.problems}
    if outcome.wacz is not None:
        found["wacz"] = {"bytes": outcome.wacz.bytes, "sha256": outcome.wacz.sha256,
                         "pages": outcome.wacz.pages}
    return found


def _echo(outcome: ExportOutcome) -> None:
    report = outcome.report
    for line in report.problems:
        click.echo(f"not exported: {line}", err=True)
    if report.captures == 0:
        click.echo("no captures in that scope: the file holds its warcinfo record only")
    click.echo(f"{report.captures:,} captures -> {report.records:,} records: "
               f"{report.responses:,} responses, {report.revisits:,} revisits, "
               f"{report.requests:,} requests, {report.metadata:,} metadata"
               + (f", {report.renderings:,} resources (screenshots and DOMs)"
                  if report.renderings else "")
               + f" ({report.pages:,} pages, {report.failed_fetches:,} failed fetches)")
    click.echo(f"{human_bytes(report.payload_bytes)} of bodies written in full; "
               f"digests {report.digest_seconds:.2f} s over {human_bytes(report.digest_bytes)}")
    size = outcome.wacz.bytes if outcome.wacz is not None else outcome.path.stat().st_size
    what = "WACZ" if outcome.wacz is not None else "WARC"
    click.echo(f"{what}: {outcome.path} ({human_bytes(size)})")
    if report.problems:
        click.echo(f"{report.skipped:,} capture(s) not exported (above)", err=True)
