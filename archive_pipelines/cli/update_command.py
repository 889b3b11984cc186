"""`update`: adopt a legacy collection without Dagster (import orphans, migrate filesystems)."""

from __future__ import annotations

import json
import time
from dataclasses import asdict

import click

from archive_pipelines.cli.context import CliContext
from archive_pipelines.cli.option_types import COUNT
from archive_pipelines.cli.progress_bar import progress_bar
from archive_pipelines.migration import ImportReport, MigrateReport, import_orphans
from archive_pipelines.migration.collection import Failure, failures, migrate_all
from archive_pipelines.storage.assembly import StorageParts


@click.command("update")
@click.option("--import-orphans", "do_import", is_flag=True,
              help="Adopt folders under archive/ the catalog does not know.")
@click.option("--migrate-fs", "do_migrate", is_flag=True,
              help="Store the files of adopted snapshots in the blob store (original paths kept).")
@click.option("--continuous", is_flag=True, help="Keep going: poll every 30 s until Ctrl-C.")
@click.option("--resume-from", default="", metavar="TS", help="First timestamp folder to import.")
@click.option("--batch-size", type=COUNT, default=None,
              help="Folders / snapshots per transaction (default: migration.batch_size).")
@click.option("--json", "as_json", is_flag=True,
              help="Print the summary and every failure as one JSON object on stdout.")
@click.pass_obj
def update_command(obj: CliContext, *, do_import: bool, do_migrate: bool, continuous: bool,
                   resume_from: str, batch_size: int | None, as_json: bool) -> None:
    """Adopt an existing ArchiveBox collection, gradually and safely.

    Ends with the list of folders that failed and why; exits 1 when any did. Each migrated
    snapshot's own WARCs (warc/*.warc.gz) are indexed, so `captures URL` finds what they hold;
    a WARC that cannot be read is listed with its offset and also makes the exit status 1 (the
    snapshot is adopted all the same).
    """
    if not (do_import or do_migrate):
        do_import = do_migrate = True
    parts = obj.parts()  # closed (worker processes stopped) when the command ends
    size = batch_size or obj.settings.migration.batch_size
    while True:
        imported = _import(parts, resume_from, size, quiet=as_json) if do_import else None
        resume_from = ""
        migrated = _migrate(parts, size, quiet=as_json) if do_migrate else None
        failed = failures(imported, migrated)
        _report(imported, migrated, failed, as_json=as_json)
        if not continuous:
            if failed or (imported and imported.error_count > len(imported.problems)) \
                    or (migrated and migrated.warc_problems):
                raise SystemExit(1)
            return
        time.sleep(30)


def _import(parts: StorageParts, resume_from: str, batch_size: int, *, quiet: bool) -> ImportReport:
    with progress_bar("import", "folder", disable=quiet) as bar:
        report = import_orphans(parts.catalog, parts.layout, resume_from=resume_from,
                                batch_size=batch_size,
                                default_user=parts.settings.views.default_user,
                                progress=lambda _name: bar.update(1))
    if not quiet:
        click.echo(f"import: processed {report.processed:,}, imported {report.imported:,}, "
                   f"reconciled {report.reconciled:,}, invalid {report.invalid:,} (moved to "
                   f"invalid/), duplicates {report.duplicates:,}, not adopted "
                   f"{report.error_count:,}")
        for name, reason, where in report.moved_to_invalid[:50]:
            click.echo(f"  > archive/{name}: {reason}; moved to {where}")
    return report


def _migrate(parts: StorageParts, batch_size: int, *, quiet: bool) -> MigrateReport:
    with progress_bar("migrate", "snapshot", disable=quiet) as bar:
        report = migrate_all(parts.catalog, parts.primary, parts.views,
                             work=parts.work, layout=parts.layout, batch_size=batch_size,
                             ingest_batch_size=parts.settings.storage.ingest_batch_size,
                             progress=bar.update)
    if not quiet:
        click.echo(f"migrate: processed {report.processed:,}, migrated {report.migrated:,}, "
                   f"failed {report.failed:,}, skipped {report.skipped:,}; files {report.files:,} "
                   f"({report.new_blobs:,} new blobs, {report.deduplicated:,} deduplicated)")
        click.echo(f"snapshot WARCs: indexed {report.warcs_indexed:,} ({report.warc_captures:,} "
                   f"captures), with unreadable records {report.warc_problems:,}")
    return report


def _report(imported: ImportReport | None, migrated: MigrateReport | None,
            failed: list[Failure], *, as_json: bool) -> None:
    if as_json:
        click.echo(json.dumps({
            "import": None if imported is None else {
                k: getattr(imported, k) for k in ("processed", "imported", "reconciled", "invalid",
                                                  "duplicates", "sqlite_only", "skipped",
                                                  "error_count", "warning_count")},
            "migrate": None if migrated is None else {
                k: getattr(migrated, k) for k in ("processed", "migrated", "failed", "skipped",
                                                  "files", "new_blobs", "deduplicated",
                                                  "bytes_in", "bytes_saved", "warcs_indexed",
                                                  "warc_captures", "warc_problems")},
            "failures": [asdict(f) for f in failed],
            "moved_to_invalid": [] if imported is None else [
                {"where": f"archive/{name}", "reason": reason, "moved_to": where}
                for name, reason, where in imported.moved_to_invalid],
            "warnings": (migrated.warnings if migrated else [])[:1000],
            "warc_problems": migrated.warc_problem_lines if migrated else [],
        }, indent=2))
        return
    for warning in (migrated.warnings if migrated else [])[:20]:
        click.echo(f"  ~ {warning}", err=True)
    if migrated and migrated.warc_problems:
        click.echo(f"{migrated.warc_problems:,} snapshot WARC file(s) with unreadable records "
                   "(the snapshots are adopted; what could be read is indexed):", err=True)
        for line in migrated.warc_problem_lines:
            click.echo(f"  ! {line}", err=True)
    if not failed:
        return
    click.echo(f"{len(failed):,} folder(s) not adopted or not migrated:", err=True)
    for failure in failed:
        click.echo(f"  ! {failure.where}: {failure.reason}", err=True)
