"""`init`: make (or complete) the data dir and bring the catalog's schema to head."""

from __future__ import annotations

import click

from archive_pipelines.blobstore import BlobStoreError, open_store
from archive_pipelines.catalog import redact_url
from archive_pipelines.cli.context import CliContext
from archive_pipelines.datadir import initialize
from archive_pipelines.settings import Settings


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
    primary = settings.primary_store
    if primary.kind == "s3":
        click.echo(f"primary       {settings.store_location(primary)} (S3; no symlink views)")
        _probe_primary(settings)
    if report.created_folders:
        click.echo(f"created       {', '.join(report.created_folders)}")
    if report.wrote_settings:
        click.echo("wrote         archive.toml (defaults)")
    if report.wrote_dagster_yaml:
        click.echo("wrote         dagster/dagster.yaml (DAGSTER_HOME for the embedded default)")
    for hint in (report.hint, report.pools_hint):
        if hint:
            click.echo(f"hint          {hint}")


def _probe_primary(settings: Settings) -> None:
    """One request to the S3 primary: a wrong bucket, endpoint or credentials are said now,
    not by the first ingest."""
    from archive_pipelines.blobstore.s3 import S3BlobStore  # boto3 is slow to import

    store = open_store(settings.primary_store, settings.data_dir)
    assert isinstance(store, S3BlobStore)
    try:
        store.probe()
    except BlobStoreError as exc:
        raise click.ClickException(f"the primary store is not usable: {exc}") from None
    click.echo("              reachable, bucket found, credentials accepted")
