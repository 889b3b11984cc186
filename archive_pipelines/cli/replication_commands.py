"""`replicate` and `replication-status`: seed 004 from the command line."""

from __future__ import annotations

import click

from archive_pipelines.cli.context import CliContext
from archive_pipelines.cli.progress import human_bytes, progress_bar
from archive_pipelines.replication import ReplicationSetup, replicate_until_met, replication_status
from archive_pipelines.storage.assembly import open_catalog


def _open(obj: CliContext) -> ReplicationSetup:
    # Only the catalog, on the command's engine (closed when the command ends): replication
    # needs no primary store, views or worker processes.
    setup = ReplicationSetup.open(open_catalog(obj.settings, obj.engine), obj.settings)
    for error in setup.replicas.errors:
        click.echo(f"  ! {error}", err=True)
    return setup


@click.command("replicate")
@click.option("--max-batches", type=click.IntRange(min=1), default=None,
              help="Stop after this many batches (default: until every blob meets the policy).")
@click.pass_obj
def replicate_command(obj: CliContext, max_batches: int | None) -> None:
    """Copy under-replicated blobs until each has `replication.retention` copies."""
    setup = _open(obj)
    with progress_bar("replicate", "blob") as bar:
        total = replicate_until_met(setup, max_batches=max_batches,
                                    on_batch=lambda batch: bar.update(len(batch)))
    made = sum(total.created.values())
    click.echo(f"{made:,} copies made ({human_bytes(sum(total.bytes_copied.values()))}); "
               + ", ".join(f"{s}: {n:,}" for s, n in sorted(total.created.items())))
    problems = sum(total.corrupted_found.values()) + sum(total.missing_found.values())
    if problems:
        click.echo(f"{problems:,} source copies found corrupted or missing (recorded)")
    for line in total.errors[:10]:
        click.echo(f"  ! {line}", err=True)
    if total.failures:
        raise click.exceptions.Exit(1)


@click.command("replication-status")
@click.pass_obj
def replication_status_command(obj: CliContext) -> None:
    """Copies per store and how many blobs fall short of the retention policy."""
    setup = _open(obj)
    status = replication_status(setup.catalog, setup.replicas, setup.policy.retention)
    click.echo(f"retention {status.retention}; {status.blobs:,} referenced blobs; "
               f"{status.under_replicated:,} under-replicated")
    for store, counts in sorted(status.copies_per_store.items()):
        detail = ", ".join(f"{k} {v:,}" for k, v in sorted(counts.items()))
        click.echo(f"  {store:<16} {detail or 'no copies'}")
    if not status.meets_policy:
        raise click.exceptions.Exit(1)
