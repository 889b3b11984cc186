"""`status`: the catalog's counts, its schema state, and the ingests left incomplete."""

from __future__ import annotations

import click

from archive_pipelines.archive_error import CatalogError
from archive_pipelines.catalog import Catalog, head_revision, redact_url
from archive_pipelines.cli.context import CliContext


@click.command("status")
@click.pass_obj
def status_command(obj: CliContext) -> None:
    """Show catalog counts and schema state."""
    settings = obj.settings
    revision = obj.catalog.schema_revision()
    if revision is None:
        raise CatalogError(
            f"catalog {redact_url(settings.catalog_url)} has no schema; run `archive-pipelines init`"
        )
    status = obj.catalog.status()
    click.echo(f"data dir        {settings.data_dir}")
    click.echo(f"catalog         {redact_url(settings.catalog_url)}  schema {revision}"
               + ("" if revision == head_revision() else "  (outdated: run init)"))
    primary = settings.primary_store
    click.echo(f"primary         {settings.store_location(primary)}  ({primary.kind}, "
               f"{primary.codec})")
    for name, value in vars(status).items():
        if name == "blobs":  # what `verify`, `gc` and `replication-status` count too
            counts = obj.catalog.blobs.counts(primary=settings.storage.primary,
                                 grace_hours=settings.storage.gc_grace_hours)
            click.echo(f"{'blobs':<15} {counts.line()}")
            click.echo(f"{'blob sizes':<15} {counts.sizes()}")
        elif name not in ("blob_bytes", "referenced_bytes"):
            click.echo(f"{_LABELS.get(name, name):<15} {value:,}")
    if revision != head_revision():
        click.echo(f"{'incomplete':<15} not known (schema outdated: run init)")
        return
    _show_incomplete(obj.catalog)


SHOWN_INCOMPLETE = 10
_LABELS = {"page_fetches": "captures"}


def _show_incomplete(catalog: Catalog) -> None:
    """Snapshots an ingest is filling or an interrupted one left partial, with the command
    that finishes each."""
    count = catalog.snapshots.count_incomplete()
    click.echo(f"{'incomplete':<15} {count:,}" + (" (ingests running or interrupted)"
                                                   if count else ""))
    for state in catalog.snapshots.incomplete_snapshots(limit=SHOWN_INCOMPLETE):
        click.echo(f"  {state.snapshot_id}  {state.url} @ {state.timestamp}: "
                   f"`{_resume_command(state.snapshot_id)}`")
    if count > SHOWN_INCOMPLETE:
        click.echo(f"  ... and {count - SHOWN_INCOMPLETE:,} more")


def _resume_command(snapshot_id: str) -> str:
    # The ingest module brings the stores, views and file workers: imported only when a
    # snapshot is incomplete.
    from archive_pipelines.storage.snapshot_ingest import resume_command

    return resume_command(snapshot_id)
