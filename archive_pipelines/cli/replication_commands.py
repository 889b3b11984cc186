"""`replicate` and `replication-status`: bring blobs to their copy count, and show it."""

from __future__ import annotations

import sys

import click

from archive_pipelines.cli.context import CliContext
from archive_pipelines.cli.option_types import COUNT, FRACTION
from archive_pipelines.cli.progress_bar import progress_bar
from archive_pipelines.cli.scrub_command import (
    echo_scrub_outcome,
    echo_scrub_table,
    scrub_with_progress,
)
from archive_pipelines.replication import ReplicationSetup, replicate_until_met, replication_status
from archive_pipelines.sizes import human_bytes

VERIFY_SAMPLE = 0.01  # replication-status --verify: 1% of each store's copies,
VERIFY_MIN_COPIES = 1000  # or this many, whichever is more


def _open(obj: CliContext, *, show_errors: bool = True) -> ReplicationSetup:
    # Only the catalog, on the command's engine (closed when the command ends): replication
    # needs no primary store, views or worker processes.
    setup = ReplicationSetup.open(obj.catalog, obj.settings)
    if show_errors:
        for error in setup.replicas.errors:
            click.echo(f"  ! {error}", err=True)
    return setup


@click.command("replicate")
@click.option("--max-batches", type=COUNT, default=None,
              help="Stop after this many batches (default: until every blob meets the policy "
                   "or nothing more can be done).")
@click.pass_obj
def replicate_command(obj: CliContext, max_batches: int | None) -> None:
    """Copy under-replicated blobs until each has `replication.retention` copies.

    Ends with one line per store (copies made, already there, failed, skipped) and exits 1
    when blobs remain short of the policy (a store unreachable, refusing or full, or a
    blob with no good copy left). A store that fails is reported once and skipped.
    """
    setup = _open(obj, show_errors=False)  # reported once each, as the run meets them
    with progress_bar("replicate", "blob") as bar:
        run = replicate_until_met(
            setup, max_batches=max_batches, on_batch=lambda batch: bar.update(len(batch)),
            on_store_problem=lambda line: bar.write(f"  ! {line}", file=sys.stderr))
    total = run.report
    per_store = ", ".join(f"{s}: {n:,}" for s, n in sorted(total.created.items()) if n)
    click.echo(f"{run.copies_made:,} copies made "
               f"({human_bytes(sum(total.bytes_copied.values()))})"
               + (f"; {per_store}" if per_store else ""))
    for line in run.store_lines(reasons=False):  # each store out was reported as it happened
        click.echo(f"  {line}")
    problems = sum(total.corrupted_found.values()) + sum(total.missing_found.values())
    if problems:
        click.echo(f"{problems:,} source copies found corrupted or missing (recorded)")
    for line in total.errors[:10]:
        click.echo(f"  ! {line}", err=True)
    more = max(0, len(total.errors) - 10) + total.errors_dropped
    if more:
        click.echo(f"  ! ... and {more:,} more", err=True)
    click.echo(run.verdict())
    if not run.policy_met:
        raise click.exceptions.Exit(1)


@click.command("replication-status")
@click.option("--verify", is_flag=True,
              help="Also read a sample of each store's copies (1% or 1,000 copies, whichever "
                   "is more) and record those found missing or corrupt.")
@click.option("--sample", type=FRACTION, default=None, metavar="FRACTION",
              help="Verify this share of each store's copies instead (implies --verify).")
@click.pass_obj
def replication_status_command(obj: CliContext, *, verify: bool, sample: float | None) -> None:
    """Copies per store and how many blobs fall short of the retention policy.

    The counts are the catalog's: a copy lost at a store since it was last read still
    counts. --verify reads a sample of every store first (`scrub` reads them all)."""
    setup = _open(obj)
    sampled = None
    if verify or sample is not None:  # first, so the counts below include what it found
        sampled = scrub_with_progress(setup, (), sample=sample or VERIFY_SAMPLE,
                                      min_sample=0 if sample else VERIFY_MIN_COPIES)
    status = replication_status(setup.catalog, setup.replicas, setup.policy.retention)
    click.echo(f"retention {status.retention}; {status.blobs:,} referenced blobs; "
               f"{status.under_replicated:,} under-replicated")
    # Unreferenced blobs are gc's, never replicated: the rows beside the referenced ones.
    counts = setup.catalog.blobs.counts(primary=obj.settings.storage.primary,
                                        grace_hours=obj.settings.storage.gc_grace_hours)
    click.echo(f"blobs: {counts.line()}")
    for store, per_status in sorted(status.copies_per_store.items()):
        detail = ", ".join(f"{k} {v:,}" for k, v in sorted(per_status.items()))
        click.echo(f"  {store:<16} {detail or 'no copies'}")
    if sampled is None:
        click.echo("counted from the catalog, no copy read: `--verify` reads a sample of each "
                   "store, `archive-pipelines scrub` every copy")
        intact = True
    else:
        click.echo("read a sample of each store:")
        echo_scrub_table(*sampled, shown_errors=setup.replicas.errors)
        intact = echo_scrub_outcome(sampled[1])
        if not intact:
            click.echo("other copies may be gone too: `archive-pipelines scrub --store NAME` "
                       "reads every copy of a store")
    if not status.meets_policy or not intact:
        raise click.exceptions.Exit(1)
