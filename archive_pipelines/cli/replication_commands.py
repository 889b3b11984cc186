"""`replicate` and `replication-status`: seed 004 from the command line."""

from __future__ import annotations

from datetime import timedelta

import click

from archive_pipelines.cli.context import CliContext
from archive_pipelines.cli.progress import human_bytes, progress_bar
from archive_pipelines.replication import (
    BatchReport,
    ReplicaSet,
    archive_batch,
    plan_batches,
    replication_status,
)
from archive_pipelines.storage import Storage


def _open(obj: CliContext) -> tuple[Storage, ReplicaSet]:
    storage = obj.storage()  # closed (worker processes stopped) when the command ends
    replicas = ReplicaSet.open(storage)
    for error in replicas.errors:
        click.echo(f"  ! {error}", err=True)
    return storage, replicas


@click.command("replicate")
@click.option("--max-batches", type=click.IntRange(min=1), default=None,
              help="Stop after this many batches (default: until every blob meets the policy).")
@click.pass_obj
def replicate_command(obj: CliContext, max_batches: int | None) -> None:
    """Copy under-replicated blobs until each has `replication.retention` copies."""
    storage, replicas = _open(obj)
    policy = obj.settings.replication
    max_age = timedelta(minutes=policy.archival_max_age_minutes)
    total, cursor, batches = BatchReport(), 0, 0
    with progress_bar("replicate", "blob") as bar:
        while max_batches is None or batches < max_batches:
            tick = plan_batches(storage, replicas, retention=policy.retention, max_age=max_age,
                                batch_size=policy.batch_size, cursor=cursor, max_batches=1)
            for batch in tick.batches:
                total.merge(archive_batch(storage, replicas, batch, retention=policy.retention,
                                          max_age=max_age, width=policy.copier_width,
                                          raise_on_failure=False))
                bar.update(len(batch))
                batches += 1
            cursor = tick.next_cursor
            if tick.wrapped and not tick.batches:
                break
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
    storage, replicas = _open(obj)
    status = replication_status(storage, replicas, obj.settings.replication.retention)
    click.echo(f"retention {status.retention}; {status.blobs:,} referenced blobs; "
               f"{status.under_replicated:,} under-replicated")
    for store, counts in sorted(status.copies_per_store.items()):
        detail = ", ".join(f"{k} {v:,}" for k, v in sorted(counts.items()))
        click.echo(f"  {store:<16} {detail or 'no copies'}")
    if not status.meets_policy:
        raise click.exceptions.Exit(1)
