"""StorageParts commands: ingest, verify, rebuild-views, migrate-to-cas, gc."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from pathlib import Path

import click

from archive_pipelines.cli.context import CliContext
from archive_pipelines.cli.inputs import BadInput, check_url, timestamp_time
from archive_pipelines.cli.progress import human_bytes, progress_bar
from archive_pipelines.cli.verify_summary import verify_verdict
from archive_pipelines.errors import ArchiveError
from archive_pipelines.migration import import_orphans
from archive_pipelines.migration.collection import estimate_dedup, migrate_all
from archive_pipelines.settings import ALL_VIEWS
from archive_pipelines.storage.assembly import StorageParts
from archive_pipelines.storage.gc import GcItem, Tally, collect_garbage
from archive_pipelines.storage.rebuild import rebuild_views
from archive_pipelines.storage.snapshot_ingest import (
    open_ingest,
    resume_command,
    resume_ingest,
    run_ingest,
)
from archive_pipelines.storage.verify import KINDS, verify_storage

VIEW_CHOICE = click.Choice(ALL_VIEWS)


def _storage(obj: CliContext, views: tuple[str, ...] = ()) -> StorageParts:
    return obj.storage(views)  # closed (worker processes stopped) when the command ends


def _print_errors(errors: list[str], limit: int = 10) -> None:
    for error in errors[:limit]:
        click.echo(f"  ! {error}", err=True)
    if len(errors) > limit:
        click.echo(f"  ! ... and {len(errors) - limit} more", err=True)


@click.command("ingest")
@click.option("--url", default=None, help="The snapshot's URL (http:// or https://).")
@click.option("--timestamp", default=None,
              help="Legacy timestamp key: unix seconds, e.g. 1700000000.123 (default: now). "
                   "Its day names the snapshot's folders in the views.")
@click.option("--user", default=None, help="Who created the snapshot (by_user view).")
@click.option("--title", default=None)
@click.option("--copy/--hardlink", "copy", default=None,
              help="Copy files into the store, or hard-link them when the store is raw and on "
                   "the same filesystem (the source files then share the stored, read-only "
                   "inode). Default: the storage.ingest_hardlink setting (hard-link).")
@click.option("--resume", "resume_id", default=None, metavar="ID",
              help="Finish the interrupted ingest of snapshot ID (its folder and extractor "
                   "are recorded): the files it committed are skipped, the rest stored.")
@click.argument("extractor", required=False)
@click.argument("directory", required=False,
                type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.pass_obj
def ingest_command(obj: CliContext, url: str | None, timestamp: str | None, user: str | None,
                   title: str | None, copy: bool | None, resume_id: str | None,
                   extractor: str | None, directory: Path | None) -> None:
    """Store every file under DIRECTORY as EXTRACTOR output of the snapshot of --url.

    The snapshot is incomplete (in `status` and `verify`) until its last file is committed.
    An interrupted ingest is finished by `ingest --resume ID` (the id is printed at the
    start) or by running the same command again, which finds it by URL and DIRECTORY;
    without --timestamp a folder whose snapshot is complete gets a new snapshot."""
    if resume_id is not None:
        if url or timestamp or user or title or extractor or directory:
            raise BadInput("--resume takes no --url, --timestamp, --user, --title, EXTRACTOR "
                           "or DIRECTORY: the snapshot's own are used")
        storage = _storage(obj)
        ingest = resume_ingest(storage.catalog, resume_id)
    else:
        if url is None or extractor is None or directory is None:
            raise BadInput("ingest needs --url URL EXTRACTOR DIRECTORY (or --resume ID)")
        check_url(url)
        # The snapshot's time, which names its day in the views.
        created_at = datetime.now(UTC) if timestamp is None else timestamp_time(timestamp)
        storage = _storage(obj)
        ingest = open_ingest(storage.catalog, url=url, extractor=extractor, source=directory,
                             timestamp=timestamp, created_at=created_at, title=title,
                             created_by=user or obj.settings.views.default_user)
    where = (f"snapshot {ingest.snapshot_id} ({ingest.url} @ {ingest.timestamp}, "
             f"{ingest.created_at:%Y-%m-%dT%H:%M:%SZ})")
    resume = resume_command(ingest.snapshot_id)
    # Printed before any file is stored: an interrupted run has said what to resume.
    if ingest.resumed:
        click.echo(f"resuming {where}, left incomplete by an interrupted ingest of "
                   f"{ingest.source} as {ingest.extractor}; if interrupted, resume with "
                   f"`{resume}`")
    else:
        click.echo(f"ingesting into {where}; if interrupted, resume with `{resume}`")
    started = time.monotonic()
    settings = obj.settings.storage
    try:
        with progress_bar("ingest", "file") as bar:
            done = run_ingest(storage.catalog, storage.primary, storage.views, storage.work,
                              ingest, progress=bar.update, batch_size=settings.ingest_batch_size,
                              hardlink=settings.ingest_hardlink if copy is None else not copy)
    except BaseException:
        click.echo(f"snapshot {ingest.snapshot_id} is incomplete: resume with `{resume}`",
                   err=True)
        raise
    elapsed = time.monotonic() - started
    report = done.files
    click.echo(f"snapshot {ingest.snapshot_id} ({ingest.url} @ {ingest.timestamp}) complete")
    if done.skipped:
        click.echo(f"skipped {done.skipped:,} files the interrupted ingest had stored")
    click.echo(f"files {report.files:,} ({report.added:,} added, {report.unchanged:,} unchanged, "
               f"{report.replaced:,} replaced) in {elapsed:.1f}s")
    click.echo(f"new blobs {report.new_blobs:,}, deduplicated {report.deduplicated:,}, "
               f"saved {human_bytes(report.bytes_saved)}, links {report.links_created:,}")
    _print_errors(report.errors)


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
        storage = _storage(obj, views)
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


@click.command("rebuild-views")
@click.option("--clean", is_flag=True, help="Remove the views' links first.")
@click.option("--view", "views", multiple=True, type=VIEW_CHOICE, help="Only these views.")
@click.pass_obj
def rebuild_views_command(obj: CliContext, clean: bool, views: tuple[str, ...]) -> None:
    """Regenerate the symlink views from the catalog."""
    started = time.monotonic()
    with progress_bar("rebuild", "link") as bar:
        storage = _storage(obj, views)
        report = rebuild_views(storage.catalog, storage.primary, storage.views,
                               storage.work, clean=clean, progress=bar.update)
    click.echo(f"{report.snapshots:,} snapshots, {report.links:,} links "
               f"({report.links_created:,} created, {report.links_fixed:,} fixed, "
               f"{report.links_removed:,} removed) in {time.monotonic() - started:.1f}s")
    if report.link_conflicts:
        click.echo(f"{report.link_conflicts:,} link path(s) blocked by real files (left alone)")


@click.command("migrate-to-cas")
@click.option("--dry-run", is_flag=True, help="Report what dedup would save; write nothing.")
@click.option("--cleanup-legacy", is_flag=True,
              help="Once a folder's files are verified in the store, move it to migrated/ "
                   "(gc deletes it after the grace period) and link archive/<ts> into "
                   "by_timestamp/. Without it the folders stay where they are.")
@click.option("--batch-size", type=click.IntRange(min=1), default=None,
              help="Snapshots per batch (default: migration.batch_size).")
@click.option("--resume-from", default="", help="First timestamp folder to take.")
@click.option("--view", "views", multiple=True, type=VIEW_CHOICE, help="Only these views.")
@click.pass_obj
def migrate_to_cas_command(obj: CliContext, dry_run: bool, cleanup_legacy: bool,
                           batch_size: int | None, resume_from: str,
                           views: tuple[str, ...]) -> None:
    """Store the files of legacy archive/<timestamp>/ folders in the blob store.

    The same adoption as `update`: every folder is imported into the catalog (ArchiveBox's
    ids, dates, tags and results kept), then its files are stored at their original paths.
    """
    if dry_run and cleanup_legacy:
        raise ArchiveError("--dry-run and --cleanup-legacy exclude each other")
    storage = _storage(obj, views)
    size = batch_size or obj.settings.migration.batch_size
    if dry_run:
        with progress_bar("estimate", "folder") as bar:
            estimate = estimate_dedup(storage.catalog, storage.layout, resume_from=resume_from,
                                      progress=lambda _n: bar.update(1))
        click.echo(f"dry run: {estimate.folders:,} folders, {estimate.files:,} files, "
                   f"{estimate.new_blobs:,} new blobs, {estimate.deduplicated:,} deduplicated")
        click.echo(f"bytes {human_bytes(estimate.bytes_in)}, would save "
                   f"{human_bytes(estimate.bytes_saved)} (dedup ratio {estimate.dedup_ratio:.2f})")
        _print_errors(estimate.errors)
        if estimate.errors:
            raise SystemExit(1)
        return
    with progress_bar("import", "folder") as bar:
        imported = import_orphans(storage.catalog, storage.layout, resume_from=resume_from,
                                  batch_size=size, default_user=obj.settings.views.default_user,
                                  progress=lambda _n: bar.update(1))
    with progress_bar("migrate", "snapshot") as bar:
        report = migrate_all(storage.catalog, storage.primary, storage.views,
                             storage.work, storage.layout, batch_size=size, retire=cleanup_legacy,
                             ingest_batch_size=obj.settings.storage.ingest_batch_size,
                             progress=bar.update)
    click.echo(f"{imported.processed:,} folders ({imported.imported:,} new snapshots), "
               f"{report.files:,} files, {report.new_blobs:,} new blobs, "
               f"{report.deduplicated:,} deduplicated")
    click.echo(f"bytes {human_bytes(report.bytes_in)}, saved {human_bytes(report.bytes_saved)}")
    if cleanup_legacy:
        click.echo(f"legacy folders replaced by links: {report.migrated:,}")
    errors = imported.errors + report.errors
    _print_errors(errors)
    if errors:
        raise SystemExit(1)


@click.command("gc")
@click.option("--grace-hours", type=float, default=None,
              help="Override storage.gc_grace_hours.")
@click.option("--dry-run", is_flag=True,
              help="Walk the same decisions as the real run and say what it would remove; "
                   "change nothing.")
@click.option("--untracked", is_flag=True,
              help="Also remove blob files the catalog has no row for, older than the grace "
                   "(leftovers of interrupted ingests). Careful: crawled bodies have no "
                   "catalog rows yet.")
@click.option("-v", "--verbose", "--list", "listing", is_flag=True,
              help="List each blob (sha256) and folder (path) removed, or that would be.")
@click.pass_obj
def gc_command(obj: CliContext, grace_hours: float | None, dry_run: bool,
               untracked: bool, listing: bool) -> None:
    """Remove blobs unreferenced for longer than the grace period (primary store only), and
    migrated legacy folders (in migrated/) older than it; with --untracked, untracked blob
    files older than it too.

    A blob whose file has another name outside the store (a legacy file it was hard-linked
    from) is unlinked from the store but frees no bytes: it is reported apart, as "unlinked
    (still held by another path)"."""
    freed = "would be freed" if dry_run else "freed"
    removed, unlinked = ("would remove", "would unlink") if dry_run else ("removed", "unlinked")

    def show(item: GcItem) -> None:
        if not listing:
            return
        if item.held:
            click.echo(f"  {unlinked} {item.kind} {item.name} ({human_bytes(item.size)}, "
                       "still held by another path)")
        else:
            click.echo(f"  {removed} {item.kind} {item.name} ({human_bytes(item.size)})")

    if dry_run:
        click.echo("dry run: nothing is changed")
    storage = _storage(obj)
    report = collect_garbage(
        storage.catalog, storage.primary, storage.views.farm, storage.layout,
        grace_hours=obj.settings.storage.gc_grace_hours if grace_hours is None else grace_hours,
        dry_run=dry_run, untracked=untracked, on_item=show)

    def tally(counted: Tally) -> str:
        text = f"{removed} {counted.count - counted.held:,}"
        text += f" ({human_bytes(counted.bytes)} {freed})"
        if counted.held:
            text += (f", {unlinked} {counted.held:,} (still held by another path, "
                     f"{human_bytes(counted.held_bytes)} not freed)")
        return text

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
    if report.untracked_checked:
        click.echo("untracked blob files: " + tally(report.untracked))
    else:
        click.echo("untracked blob files: not checked (--untracked)")
    folders = report.folders
    text = f"migrated legacy folders: {removed} {folders.count:,} " \
           f"({human_bytes(folders.bytes)} {freed}"
    if folders.held:
        text += (f"; {folders.held:,} files' bytes ({human_bytes(folders.held_bytes)}) "
                 "still held by another path, e.g. the store")
    click.echo(text + ")")
    click.echo(f"total: {human_bytes(report.total_bytes_freed)} {freed}")
    _print_errors(report.errors)
