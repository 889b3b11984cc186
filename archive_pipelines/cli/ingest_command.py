"""`ingest`: store a directory's files as one extractor's output of a snapshot, resumably."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from pathlib import Path

import click

from archive_pipelines.cli.context import CliContext
from archive_pipelines.cli.inputs import BadInput, check_url, timestamp_time
from archive_pipelines.cli.progress_bar import progress_bar
from archive_pipelines.cli.storage_output import print_errors
from archive_pipelines.sizes import human_bytes
from archive_pipelines.storage.snapshot_ingest import (
    check_extractor,
    open_ingest,
    resume_command,
    resume_ingest,
    run_ingest,
)


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
                   "inode). Default: the storage.ingest_hardlink setting (hard-link). An S3 "
                   "primary always copies (checksummed uploads).")
@click.option("--resume", "resume_id", default=None, metavar="ID",
              help="Finish the interrupted ingest of snapshot ID (its folder and extractor "
                   "are recorded): the files it committed are skipped, the rest stored.")
@click.argument("extractor", required=False)
@click.argument("directory", required=False,
                type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.pass_obj
def ingest_command(obj: CliContext, url: str | None, timestamp: str | None, *, user: str | None,
                   title: str | None, copy: bool | None, resume_id: str | None,
                   extractor: str | None, directory: Path | None) -> None:
    """Store every file under DIRECTORY as EXTRACTOR output of the snapshot of --url.

    The snapshot is incomplete (in `status` and `verify`) until its last file is committed.
    An interrupted ingest is finished by `ingest --resume ID` (the id is printed at the
    start) or by running the same command again, which finds it by URL and DIRECTORY;
    without --timestamp a folder whose snapshot is complete gets a new snapshot.

    Exit status 1 when a file was not stored: one that changed while it was read, vanished
    or could not be read leaves the snapshot incomplete (fix it, then resume as above: the
    files stored are skipped); symlinks and special files are never stored, only listed.
    EXTRACTOR is a plain name such as wget (letters, digits, ._@+-)."""
    if resume_id is not None:
        if url or timestamp or user or title or extractor or directory:
            raise BadInput("--resume takes no --url, --timestamp, --user, --title, EXTRACTOR "
                           "or DIRECTORY: the snapshot's own are used")
        parts = obj.parts()  # closed (worker processes stopped) when the command ends
        ingest = resume_ingest(parts.catalog, resume_id)
    else:
        if url is None or extractor is None or directory is None:
            raise BadInput("ingest needs --url URL EXTRACTOR DIRECTORY (or --resume ID)")
        check_url(url)
        check_extractor(extractor)
        # The snapshot's time, which names its day in the views.
        created_at = datetime.now(UTC) if timestamp is None else timestamp_time(timestamp)
        parts = obj.parts()  # closed (worker processes stopped) when the command ends
        ingest = open_ingest(parts.catalog, url=url, extractor=extractor, source=directory,
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
            done = run_ingest(parts.catalog, parts.primary, parts.views, work=parts.work,
                              ingest=ingest, progress=bar.update, batch_size=settings.ingest_batch_size,
                              hardlink=settings.ingest_hardlink if copy is None else not copy)
    except BaseException:
        click.echo(f"snapshot {ingest.snapshot_id} is incomplete: resume with `{resume}`",
                   err=True)
        raise
    elapsed = time.monotonic() - started
    report = done.files
    state = "complete" if done.complete else "incomplete"
    click.echo(f"snapshot {ingest.snapshot_id} ({ingest.url} @ {ingest.timestamp}) {state}")
    if done.skipped:
        click.echo(f"skipped {done.skipped:,} files the interrupted ingest had stored")
    click.echo(f"files {report.files:,} ({report.added:,} added, {report.unchanged:,} unchanged, "
               f"{report.replaced:,} replaced) in {elapsed:.1f}s")
    click.echo(f"new blobs {report.new_blobs:,}, deduplicated {report.deduplicated:,}, "
               f"saved {human_bytes(report.bytes_saved)}, links {report.links_created:,}")
    print_errors(report.errors + done.left_out)
    if report.errors:
        click.echo(f"{len(report.errors):,} file(s) not stored (listed on stderr); once they "
                   f"are readable and no longer changing, finish with `{resume}`")
    elif not done.complete:
        click.echo(f"no file stored in the snapshot; add files to {ingest.source}, then "
                   f"finish with `{resume}`")
    if done.left_out:
        click.echo(f"{len(done.left_out):,} symlink(s) or special file(s) left out (only "
                   "regular files are stored)")
    if done.not_stored or not done.complete:
        raise click.exceptions.Exit(1)
