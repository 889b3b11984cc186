"""`migrate-to-cas`: store the files of legacy archive/<timestamp>/ folders in the blob store."""

from __future__ import annotations

import click

from archive_pipelines.archive_error import ArchiveError
from archive_pipelines.cli.context import CliContext
from archive_pipelines.cli.option_types import COUNT
from archive_pipelines.cli.progress_bar import progress_bar
from archive_pipelines.cli.storage_output import VIEW_CHOICE, print_errors
from archive_pipelines.migration import import_orphans
from archive_pipelines.migration.collection import estimate_dedup, migrate_all
from archive_pipelines.sizes import human_bytes


@click.command("migrate-to-cas")
@click.option("--dry-run", is_flag=True, help="Report what dedup would save; write nothing.")
@click.option("--cleanup-legacy", is_flag=True,
              help="Once a folder's files are verified in the store, move it to migrated/ "
                   "(gc deletes it after the grace period) and link archive/<ts> into "
                   "by_timestamp/. Without it the folders stay where they are. With an S3 "
                   "primary the folders always stay; this marks the verified snapshots "
                   "migrated.")
@click.option("--batch-size", type=COUNT, default=None,
              help="Snapshots per batch (default: migration.batch_size).")
@click.option("--resume-from", default="", help="First timestamp folder to take.")
@click.option("--view", "views", multiple=True, type=VIEW_CHOICE, help="Only these views.")
@click.pass_obj
def migrate_to_cas_command(obj: CliContext, *, dry_run: bool, cleanup_legacy: bool,
                           batch_size: int | None, resume_from: str,
                           views: tuple[str, ...]) -> None:
    """Store the files of legacy archive/<timestamp>/ folders in the blob store.

    The same adoption as `update`: every folder is imported into the catalog (ArchiveBox's
    ids, dates, tags and results kept), then its files are stored at their original paths.
    """
    if dry_run and cleanup_legacy:
        raise ArchiveError("--dry-run and --cleanup-legacy exclude each other")
    parts = obj.parts(views)  # closed (worker processes stopped) when the command ends
    size = batch_size or obj.settings.migration.batch_size
    if dry_run:
        with progress_bar("estimate", "folder") as bar:
            estimate = estimate_dedup(parts.catalog, parts.layout, resume_from=resume_from,
                                      progress=lambda _n: bar.update(1))
        click.echo(f"dry run: {estimate.folders:,} folders, {estimate.files:,} files, "
                   f"{estimate.new_blobs:,} new blobs, {estimate.deduplicated:,} deduplicated")
        click.echo(f"bytes {human_bytes(estimate.bytes_in)}, would save "
                   f"{human_bytes(estimate.bytes_saved)} (dedup ratio {estimate.dedup_ratio:.2f})")
        print_errors(estimate.errors)
        if estimate.errors:
            raise SystemExit(1)
        return
    with progress_bar("import", "folder") as bar:
        imported = import_orphans(parts.catalog, parts.layout, resume_from=resume_from,
                                  batch_size=size, default_user=obj.settings.views.default_user,
                                  progress=lambda _n: bar.update(1))
    with progress_bar("migrate", "snapshot") as bar:
        report = migrate_all(parts.catalog, parts.primary, parts.views,
                             work=parts.work, layout=parts.layout, batch_size=size, retire=cleanup_legacy,
                             ingest_batch_size=obj.settings.storage.ingest_batch_size,
                             progress=bar.update)
    click.echo(f"{imported.processed:,} folders ({imported.imported:,} new snapshots), "
               f"{report.files:,} files, {report.new_blobs:,} new blobs, "
               f"{report.deduplicated:,} deduplicated")
    click.echo(f"bytes {human_bytes(report.bytes_in)}, saved {human_bytes(report.bytes_saved)}")
    if cleanup_legacy and parts.primary.is_local:
        click.echo(f"legacy folders replaced by links: {report.migrated:,}")
    elif cleanup_legacy:
        click.echo(f"snapshots verified in the bucket: {report.migrated:,} (an S3 primary keeps "
                   "the legacy folders as they are: delete them yourself if you no longer "
                   "need them)")
    errors = imported.errors + report.errors
    print_errors(errors)
    if errors:
        raise SystemExit(1)
