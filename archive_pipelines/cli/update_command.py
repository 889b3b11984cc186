"""`update`: adopt a legacy collection without Dagster (import orphans, migrate filesystems)."""

from __future__ import annotations

import time

import click

from archive_pipelines.cli.context import CliContext
from archive_pipelines.cli.progress import progress_bar
from archive_pipelines.migration import (
    MigrateReport,
    import_orphans,
    migrate_batch,
    next_migration_batches,
)
from archive_pipelines.storage import Storage


@click.command("update")
@click.option("--import-orphans", "do_import", is_flag=True,
              help="Adopt folders under archive/ the catalog does not know.")
@click.option("--migrate-fs", "do_migrate", is_flag=True,
              help="Migrate snapshots whose filesystem layout is behind (into the blob store).")
@click.option("--continuous", is_flag=True, help="Keep going: poll every 30 s until Ctrl-C.")
@click.option("--resume-from", default="", metavar="TS", help="First timestamp folder to import.")
@click.option("--batch-size", type=click.IntRange(min=1), default=None,
              help="Folders / snapshots per transaction (default: migration.batch_size).")
@click.pass_obj
def update_command(obj: CliContext, do_import: bool, do_migrate: bool, continuous: bool,
                   resume_from: str, batch_size: int | None) -> None:
    """Adopt an existing ArchiveBox-style collection, gradually and safely (seed 001)."""
    if not (do_import or do_migrate):
        do_import = do_migrate = True
    storage = obj.storage()  # closed (worker processes stopped) when the command ends
    size = batch_size or obj.settings.migration.batch_size
    while True:
        if do_import:
            _import(storage, resume_from, size)
            resume_from = ""
        if do_migrate:
            _migrate(storage, size)
        if not continuous:
            return
        time.sleep(30)


def _import(storage: Storage, resume_from: str, batch_size: int) -> None:
    with progress_bar("import", "folder") as bar:
        report = import_orphans(storage, resume_from=resume_from, batch_size=batch_size,
                                progress=lambda _name: bar.update(1))
    click.echo(f"import: processed {report.processed:,}, imported {report.imported:,}, "
               f"reconciled {report.reconciled:,}, invalid {report.invalid:,} (moved to "
               f"invalid/), duplicates {report.duplicates:,}, errors {report.error_count:,}")
    for line in report.errors[:10]:
        click.echo(f"  ! {line}", err=True)


def _migrate(storage: Storage, batch_size: int) -> None:
    total, cursor = MigrateReport(), ""
    with progress_bar("migrate", "snapshot") as bar:
        while True:
            batches, cursor = next_migration_batches(storage, cursor=cursor,
                                                     batch_size=batch_size, max_batches=1)
            if not batches:
                break
            for batch in batches:
                report = migrate_batch(storage, batch)
                total.processed += report.processed
                total.migrated += report.migrated
                total.failed += report.failed
                total.errors.extend(report.errors[:10])
                bar.update(len(batch))
            if not cursor:
                break
    click.echo(f"migrate: processed {total.processed:,}, migrated {total.migrated:,}, "
               f"failed {total.failed:,}")
    for line in total.errors[:10]:
        click.echo(f"  ! {line}", err=True)
