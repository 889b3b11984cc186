"""`show`: one snapshot, found by its id (ArchiveBox's, for an adopted collection) or timestamp."""

from __future__ import annotations

import json
from dataclasses import asdict
from datetime import datetime

import click

from archive_pipelines.archive_error import NotFound
from archive_pipelines.cli.context import CliContext
from archive_pipelines.sizes import human_bytes


@click.command("show")
@click.argument("ref", metavar="ID_OR_TIMESTAMP")
@click.option("--json", "as_json", is_flag=True, help="Print the snapshot as JSON.")
@click.pass_obj
def show_command(obj: CliContext, ref: str, *, as_json: bool) -> None:
    """Show a snapshot: its id (ArchiveBox's own id for an adopted one, with or without
    dashes, or an 8+ character prefix) or its timestamp. Exit 1 when none matches."""
    with obj.catalog.transaction() as tx:
        ids = tx.snapshots.find_snapshots(ref)
        details = [found for sid in ids if (found := tx.snapshots.snapshot_details(sid)) is not None]
    if not details:
        raise NotFound(f"no snapshot with id or timestamp {ref!r}")
    if as_json:
        rows = [asdict(d) for d in details]
        click.echo(json.dumps(rows[0] if len(rows) == 1 else rows, indent=2, default=_json_value))
        return
    settings = obj.settings
    primary = settings.primary_store
    # On an S3 primary the blobs are objects in the bucket and there are no folder views.
    where = (f"files under {settings.data_dir}/archive/{{timestamp}}/" if settings.primary_is_local
             else f"blobs in {settings.store_location(primary)}; no folder views")
    for found in details:
        click.echo(f"id          {found.id}")
        click.echo(f"url         {found.url}")
        click.echo(f"timestamp   {found.timestamp}")
        click.echo(f"title       {found.title or ''}")
        click.echo(f"added       {found.added.isoformat()}")
        click.echo(f"updated     {found.updated.isoformat() if found.updated else ''}")
        click.echo(f"tags        {', '.join(found.tags)}")
        click.echo(f"layout      {found.fs_version}  ({where.format(timestamp=found.timestamp)})")
        click.echo(f"files       {found.files:,} ({human_bytes(found.bytes)})"
                   + (f", {found.symlinks:,} symlink(s)" if found.symlinks else ""))
        for result in found.results:
            refs = " ".join(filter(None, (result.archivebox_id and f"#{result.archivebox_id}",
                                          result.archivebox_uuid)))
            when = result.start_ts.isoformat() if result.start_ts else "-"
            click.echo(f"  {result.extractor:<12} {result.status:<10} {when}  "
                       f"{result.output or ''}  {refs}".rstrip())
        if len(details) > 1:
            click.echo()


def _json_value(value: object) -> str:
    if isinstance(value, datetime):
        return value.isoformat()
    raise TypeError(f"cannot show {type(value).__name__} as JSON")
