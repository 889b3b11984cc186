"""`init` and `status`."""

from __future__ import annotations

import click

from archive_pipelines.catalog import CatalogRepository
from archive_pipelines.catalog.migrate import current_revision, head_revision
from archive_pipelines.catalog.urls import redact_url
from archive_pipelines.cli.context import CliContext
from archive_pipelines.datadir import initialize
from archive_pipelines.errors import CatalogError
from archive_pipelines.storage.snapshot_ingest import resume_command


@click.command("init")
@click.pass_obj
def init_command(obj: CliContext) -> None:
    """Create the data dir layout, write archive.toml if absent, migrate the catalog.

    O(1) whatever archive/ holds: existing folders are adopted later, lazily.
    """
    settings = obj.unchecked_settings  # the one command that may make the data dir
    report = initialize(settings)
    click.echo(f"data dir      {report.data_dir}")
    click.echo(f"catalog       {redact_url(settings.catalog_url)}")
    schema = (f"{report.schema_before or 'empty'} -> {report.schema_after}"
              if report.schema_before != report.schema_after else f"{report.schema_after} (current)")
    click.echo(f"schema        {schema}")
    if report.created_folders:
        click.echo(f"created       {', '.join(report.created_folders)}")
    if report.wrote_settings:
        click.echo("wrote         archive.toml (defaults)")
    if report.wrote_dagster_yaml:
        click.echo("wrote         dagster/dagster.yaml (DAGSTER_HOME for the embedded default)")
    if report.hint:
        click.echo(f"hint          {report.hint}")


@click.command("status")
@click.pass_obj
def status_command(obj: CliContext) -> None:
    """Show catalog counts and schema state."""
    settings = obj.settings
    revision = current_revision(obj.engine)
    if revision is None:
        raise CatalogError(
            f"catalog {redact_url(settings.catalog_url)} has no schema; run `archive-pipelines init`"
        )
    status = obj.catalog.status()
    click.echo(f"data dir        {settings.data_dir}")
    click.echo(f"catalog         {redact_url(settings.catalog_url)}  schema {revision}"
               + ("" if revision == head_revision() else "  (outdated: run init)"))
    for name, value in vars(status).items():
        click.echo(f"{name:<15} {value:,}")
    if revision != head_revision():
        click.echo(f"{'incomplete':<15} not known (schema outdated: run init)")
        return
    _show_incomplete(obj.catalog)


SHOWN_INCOMPLETE = 10


def _show_incomplete(catalog: CatalogRepository) -> None:
    """Snapshots an ingest is filling or an interrupted one left partial, with the command
    that finishes each."""
    count = catalog.count_incomplete()
    click.echo(f"{'incomplete':<15} {count:,}" + (" (ingests running or interrupted)"
                                                   if count else ""))
    for state in catalog.incomplete_snapshots(limit=SHOWN_INCOMPLETE):
        click.echo(f"  {state.snapshot_id}  {state.url} @ {state.timestamp}: "
                   f"`{resume_command(state.snapshot_id)}`")
    if count > SHOWN_INCOMPLETE:
        click.echo(f"  ... and {count - SHOWN_INCOMPLETE:,} more")
