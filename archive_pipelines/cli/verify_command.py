"""`verify`: check the primary store and the views against the catalog."""

from __future__ import annotations

import click

from archive_pipelines.cli.context import CliContext
from archive_pipelines.cli.progress import progress_bar
from archive_pipelines.cli.storage_output import VIEW_CHOICE
from archive_pipelines.cli.verify_summary import verify_verdict
from archive_pipelines.storage.verify import KINDS, verify_storage


@click.command("verify")
@click.option("--fix", is_flag=True, help="Repair links and ref counts.")
@click.option("--vacuum", is_flag=True, help="Remove orphan links and empty folders.")
@click.option("--deep", is_flag=True,
              help="Re-read and hash every referenced blob (slow). Without it only the "
                   "existence of each blob file is checked: a blob whose bytes changed in "
                   "place, e.g. through a legacy path hard-linked into the store, goes "
                   "unnoticed.")
@click.option("--view", "views", multiple=True, type=VIEW_CHOICE, help="Limit to these views.")
@click.pass_obj
def verify_command(obj: CliContext, fix: bool, vacuum: bool, deep: bool,
                   views: tuple[str, ...]) -> None:
    """Check the store and views against the catalog; exit 1 if problems remain.

    Blob contents are only hashed with --deep: a file hard-linked into the store at ingest
    shares its inode with the legacy path, so editing that path in place (same size) changes
    the blob, which then no longer hashes to its name. Only --deep finds that (reported as
    corrupt_blob_files). Copies at the other stores are not read: `scrub` reads them."""
    with progress_bar("verify", "item") as bar:
        storage = obj.storage(views)  # closed (worker processes stopped) when the command ends
        report = verify_storage(storage.catalog, storage.primary, storage.views,
                                fix=fix, vacuum=vacuum, deep=deep, data_dir=storage.layout.root,
                                progress=lambda _kind, n: bar.update(n))
    click.echo(f"checked {report.blobs_checked:,} blobs{' (hashed)' if deep else ''}, "
               f"{report.files_checked:,} files, {report.links_checked:,} links")
    for kind in KINDS:
        if report.found[kind]:
            fixed = f", fixed {report.fixed[kind]:,}" if report.fixed[kind] else ""
            click.echo(f"  {kind:<22} {report.found[kind]:,}{fixed}")
            if kind in ("missing_blob_files", "corrupt_blob_files", "untracked_blob_files"):
                for example in report.examples.get(kind, []):
                    click.echo(f"    {example}")
            if kind == "incomplete_snapshots":  # each with the command that finishes it
                for example in report.examples.get(kind, []):
                    click.echo(f"    {example}")
    primary = obj.settings.storage.primary
    for line in verify_verdict(report, deep=deep, primary=primary,
                               replicas=[s.name for s in obj.settings.stores if s.name != primary]):
        click.echo(line)
    if report.problems:
        raise click.exceptions.Exit(1)
