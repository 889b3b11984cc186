"""`gc`: remove unreferenced blobs and migrated legacy folders once past the grace period."""

from __future__ import annotations

from datetime import timedelta

import click

from archive_pipelines.catalog import Catalog, grace_cutoff
from archive_pipelines.cli.context import CliContext
from archive_pipelines.cli.option_types import HOURS
from archive_pipelines.cli.storage_output import print_errors
from archive_pipelines.settings import Settings
from archive_pipelines.sizes import human_bytes
from archive_pipelines.storage.gc import GcItem, Tally, collect_garbage


@click.command("gc")
@click.option("--grace-hours", type=HOURS, metavar="HOURS", default=None,
              help="Override storage.gc_grace_hours.")
@click.option("--dry-run", is_flag=True,
              help="Walk the same decisions as the real run and say what it would remove; "
                   "change nothing.")
@click.option("--untracked", is_flag=True,
              help="Also remove blob files the catalog has no row for, older than the grace "
                   "(leftovers of interrupted ingests). Careful: crawled bodies have no "
                   "catalog rows yet.")
@click.option("-v", "--verbose", "--list", "listing", is_flag=True,
              help="List each blob (sha256) and folder (path) removed, or that would be, and "
                   "each unreferenced blob still within the grace.")
@click.pass_obj
def gc_command(obj: CliContext, grace_hours: float | None, *, dry_run: bool,
               untracked: bool, listing: bool) -> None:
    """Remove blobs unreferenced for longer than the grace period (primary store only), and
    migrated legacy folders (in migrated/) older than it; with --untracked, untracked blob
    files older than it too.

    On an S3 primary a blob is first moved to the bucket's gc-trash/ folder (put back if
    an ingest references it again meanwhile); a later run deletes it from there once it has
    waited the grace period there too.

    A blob whose file has another name outside the store (a legacy file it was hard-linked
    from) is unlinked from the store but frees no bytes: it is reported apart, as "unlinked
    (still held by another path)"."""
    freed = "would be freed" if dry_run else "freed"
    removed, unlinked = ("would remove", "would unlink") if dry_run else ("removed", "unlinked")
    # On an S3 primary blobs go to the bucket's trash first (`storage.gc_bucket`).
    to_trash = "would move to the trash" if dry_run else "moved to the trash"
    in_bucket = not obj.settings.primary_is_local

    def show(item: GcItem) -> None:
        if not listing:
            return
        if item.held:
            click.echo(f"  {unlinked} {item.kind} {item.name} ({human_bytes(item.size)}, "
                       "still held by another path)")
        elif in_bucket and item.kind in ("blob", "untracked"):
            click.echo(f"  {to_trash}: {item.kind} {item.name} ({human_bytes(item.size)})")
        else:
            click.echo(f"  {removed} {item.kind} {item.name} ({human_bytes(item.size)})")

    if dry_run:
        click.echo("dry run: nothing is changed")
    parts = obj.parts()  # closed (worker processes stopped) when the command ends
    hours = obj.settings.storage.gc_grace_hours if grace_hours is None else grace_hours
    report = collect_garbage(
        parts.catalog, parts.primary, parts.views.farm, layout=parts.layout,
        grace_hours=hours, dry_run=dry_run, untracked=untracked, on_item=show)

    def tally(counted: Tally) -> str:
        if report.deferred:
            return (f"{'would move' if dry_run else 'moved'} {counted.count:,} "
                    f"({human_bytes(counted.bytes)}) to the trash, deleted by a gc run once "
                    "they have waited the grace there")
        text = f"{removed} {counted.count - counted.held:,}"
        text += f" ({human_bytes(counted.bytes)} {freed})"
        if counted.held:
            text += (f", {unlinked} {counted.held:,} (still held by another path, "
                     f"{human_bytes(counted.held_bytes)} not freed)")
        return text

    if report.deferred:  # an S3 primary: the bucket's trash first
        click.echo(f"trash (gc-trash/ in the bucket): {'would delete' if dry_run else 'deleted'} "
                   f"{report.trash.count:,} ({human_bytes(report.trash.bytes)} {freed}), "
                   f"{'would put back' if dry_run else 'put back'} {report.trash_restored:,} "
                   f"(referenced again), {report.trash_waiting:,} waiting out the grace there")

    click.echo(f"unreferenced blobs past the grace: {report.candidates:,}; "
               + tally(report.blobs))
    if report.already_gone:
        click.echo(f"  {report.already_gone:,} already missing from the store "
                   f"(catalog {'would be ' if dry_run else ''}updated)")
    if report.revived:
        click.echo(f"  revived {report.revived:,} (referenced again meanwhile: kept)")
    if report.kept_for_crawl:
        click.echo(f"  kept {report.kept_for_crawl:,} crawled bodies whose segments are not "
                   "ingested yet (`ingest-crawl`)")
    _echo_waiting(parts.catalog, obj.settings, hours=hours,
                  shown=None if listing else (WAITING_SHOWN if dry_run else 0))
    untracked_kind = "untracked objects" if report.deferred else "untracked blob files"
    if report.untracked_checked:
        click.echo(f"{untracked_kind}: " + tally(report.untracked))
    else:
        click.echo(f"{untracked_kind}: not checked (--untracked)")
    folders = report.folders
    text = f"migrated legacy folders: {removed} {folders.count:,} " \
           f"({human_bytes(folders.bytes)} {freed}"
    if folders.held:
        text += (f"; {folders.held:,} files' bytes ({human_bytes(folders.held_bytes)}) "
                 "still held by another path, e.g. the store")
    click.echo(text + ")")
    click.echo(f"total: {human_bytes(report.total_bytes_freed)} {freed}")
    counts = parts.catalog.blobs.counts(primary=obj.settings.storage.primary, grace_hours=hours)
    click.echo(f"blobs{'' if dry_run else ' now'}: {counts.line()}")
    print_errors(report.errors)


WAITING_SHOWN = 10  # waiting blobs a dry run names without --list


def _echo_waiting(catalog: Catalog, settings: Settings, *, hours: float,
                  shown: int | None) -> None:
    """Unreferenced blobs gc keeps for now (within the grace): how many, and `shown` of
    them by name (None: all), each with the time it becomes removable."""
    cutoff = grace_cutoff(hours)
    primary = settings.storage.primary
    with catalog.reading() as tx:
        counts = tx.blobs.count_blobs(primary=primary, cutoff=cutoff)
        waiting = tx.blobs.waiting_blobs(primary=primary, cutoff=cutoff, limit=shown) \
            if shown != 0 else []
    click.echo(f"unreferenced blobs within the grace ({hours:g} h): {counts.waiting:,}; kept "
               "until their grace ends")
    for blob in waiting:
        due = ("never (no clock: `verify --fix` sets one)" if blob.unreferenced_since is None
               else f"{blob.unreferenced_since + timedelta(hours=hours):%Y-%m-%d %H:%M} UTC")
        click.echo(f"  waiting blob {blob.sha256} ({human_bytes(blob.size)}), removable from {due}")
    if shown and counts.waiting > len(waiting):
        click.echo(f"  ... and {counts.waiting - len(waiting):,} more (--list names every one)")
