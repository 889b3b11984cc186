"""`verify`: check the primary store and the views against the catalog."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import click

from archive_pipelines.cli.context import CliContext
from archive_pipelines.cli.progress_bar import progress_bar
from archive_pipelines.cli.storage_output import VIEW_CHOICE
from archive_pipelines.cli.verify_summary import echo_verify_report, verify_json, verify_verdict
from archive_pipelines.storage.verify import EXAMPLES, verify_storage

if TYPE_CHECKING:
    from archive_pipelines.blobstore import BlobStore
    from archive_pipelines.settings import Settings


@click.command("verify")
@click.option("--fix", is_flag=True,
              help="Repair links and ref counts; on an S3 primary, restore missing or corrupt "
                   "blobs from a replica holding a good copy.")
@click.option("--vacuum", is_flag=True, help="Remove orphan links and empty folders.")
@click.option("--deep", is_flag=True,
              help="Re-read and hash every referenced blob (slow). Without it only the "
                   "existence of each blob file is checked: a blob whose bytes changed in "
                   "place, e.g. through a legacy path hard-linked into the store, goes "
                   "unnoticed.")
@click.option("--view", "views", multiple=True, type=VIEW_CHOICE, help="Limit to these views.")
@click.option("--json", "as_json", is_flag=True,
              help="Print the report as JSON, naming every problem (the text names the first "
                   f"{EXAMPLES} of each kind).")
@click.pass_obj
def verify_command(obj: CliContext, *, fix: bool, vacuum: bool, deep: bool,
                   views: tuple[str, ...], as_json: bool) -> None:
    """Check the store and views against the catalog; exit 1 if problems remain.

    Each problem is named: the blob's sha256, the link's path under archive/, the snapshot.
    Blob contents are only hashed with --deep: a file hard-linked into the store at ingest
    shares its inode with the legacy path, so editing that path in place (same size) changes
    the blob, which then no longer hashes to its name. Only --deep finds that (reported as
    corrupt_blob_files). Copies at the other stores are not read: `scrub` reads them."""
    settings = obj.settings
    if views and not settings.primary_is_local:
        raise click.UsageError(f"--view {', '.join(views)}: an S3 primary has no symlink views")
    with progress_bar("verify", "item", disable=as_json) as bar:
        parts = obj.parts(views)  # closed (worker processes stopped) when the command ends
        report = verify_storage(parts.catalog, parts.primary, parts.views,
                                fix=fix, vacuum=vacuum, deep=deep, data_dir=parts.layout.root,
                                examples=None if as_json else EXAMPLES,
                                replicas=_replicas(settings) if fix else (),
                                progress=lambda _kind, n: bar.update(n))
    counts = parts.catalog.blobs.counts(primary=obj.settings.storage.primary,
                         grace_hours=obj.settings.storage.gc_grace_hours)
    primary = obj.settings.storage.primary
    verdict = verify_verdict(report, deep=deep, primary=primary,
                             replicas=[s.name for s in obj.settings.stores if s.name != primary])
    root, store = parts.layout.root, parts.primary.store
    location = settings.store_location(settings.primary_store)

    def blob_path(sha: str) -> str:
        path = store.local_path(sha)
        if path is None:  # an S3 primary: the object's URL
            return f"{location}/{store.key(sha)}"
        return str(path.relative_to(root)) if path.is_relative_to(root) else str(path)

    if as_json:
        click.echo(json.dumps(verify_json(report, counts, verdict, blob_path=blob_path),
                              indent=2))
    else:
        echo_verify_report(report, counts, deep=deep, blob_path=blob_path)
        for line in verdict:
            click.echo(line)
    if report.problems:
        raise click.exceptions.Exit(1)


def _replicas(settings: Settings) -> list[BlobStore]:
    """The stores other than the primary, in settings order: where `--fix` finds a good copy
    of a blob an S3 primary lost."""
    from archive_pipelines.blobstore import open_store

    primary = settings.storage.primary
    return [open_store(config, settings.data_dir) for config in settings.stores
            if config.name != primary]
