"""Garbage collection: remove blobs unreferenced for longer than the grace period, optionally
untracked blob files older than it, and legacy folders the migration moved to `migrated/`
longer ago than that (`storage.retired`).

Each kind of garbage is chosen by one function that the dry run and the real run both
follow, and each item's outcome is judged by one function too (`_fate`, `folder_usage`):
what a dry run lists is what the real run removes, short of concurrent changes.

- Unreferenced blobs (`_unreferenced_blobs`): ref_count 0 for longer than the grace and
  present on the primary. The blob row stays (ref_count 0, primary copy `missing`) so a
  later ingest of the same bytes revives it.
- Untracked blob files (`_untracked_files`, opt-in): files in the primary store with no
  catalog row, whose inode changed before the grace (an ingest writes or hard-links a file
  before its transaction records it: the grace protects that moment). To close the other
  race, an ingest that finds such a file already there and records it without rewriting
  it, each one first gets a catalog row of its own (ref_count 0, present) and is then
  collected as an unreferenced blob: an ingest committing meanwhile references that row
  and revives the file, exactly as for a collected blob.
- Retired folders (`storage.retired.retired_entries`).

Crawled bodies: a body that a crawl record not yet in the catalog names (a segment not yet
ingested, or a running crawler's journal: `captures.pending`) is never removed by either
pass; the set is read again before every batch, so segments a running crawl closes
meanwhile count too. What no file names yet is a body the crawler wrote in the last
moments: the grace (on the inode's change time) keeps those. Known limit: a crawler that
finds an *old* unreferenced blob already stored and reuses it, in the instant between gc's
re-read and its removal, loses that body (the record is ingested with the body reported
missing); the blob must have been unreferenced for the whole grace first.

Only the primary store is touched; replicas are append-only (replication never deletes). A blob is removed
only after a transaction has claimed it (ref_count 0, its row locked, its primary copy
marked `missing`); the file is then moved to a trash name, the ref count re-checked, and
only then unlinked, or put back if it was referenced again meanwhile (`revived`).

An S3 primary (no rename, several machines sharing the catalog and the bucket) goes through
`storage.gc_bucket`: the same claim and re-check around a move to the bucket's trash, whose
objects a later run deletes once they have waited the grace there.

Hard links: a blob whose inode has a name outside the store (st_nlink beyond the store's
name and its aliases; e.g. the legacy file it was hard-linked from at ingest) is removed from
the store all the same, since nothing in the catalog references it, but counted apart as
"unlinked (still held by another path)": removing the store's name frees none of its bytes.
"""

from __future__ import annotations

import os
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Literal

from archive_pipelines.blobstore import BlobStore
from archive_pipelines.blobstore.store_errors import BlobIntegrityError, BlobNotFound
from archive_pipelines.captures.pending import pending_body_hashes
from archive_pipelines.catalog import Catalog, utcnow
from archive_pipelines.datadir import DataDir
from archive_pipelines.storage.gc_report import GcItem, GcReport, Kind, Tally
from archive_pipelines.storage.primary import PrimaryStore
from archive_pipelines.storage.retired import FolderUsage, remove_retired
from archive_pipelines.storage.unreferenced import unreferenced_blobs
from archive_pipelines.storage.untracked import untracked_hashes
from archive_pipelines.views import ViewFarm

TRASH = ".gc-trash"

__all__ = ["GcItem", "GcReport", "Kind", "Tally", "collect_garbage", "unreferenced_blobs"]

def collect_garbage(catalog: Catalog, primary: PrimaryStore, farm: ViewFarm, *, layout: DataDir,
                    grace_hours: float,
                    dry_run: bool = False, untracked: bool = False, batch: int = 500,
                    on_item: Callable[[GcItem], object] | None = None) -> GcReport:
    """Collect garbage; `dry_run` walks the same decisions and changes nothing.

    `grace_hours`: the `storage.gc_grace_hours` setting, unless overridden. `on_item` hears
    of every item removed (or, in a dry run, that would be)."""
    grace = grace_hours
    report = GcReport(dry_run=dry_run, untracked_checked=untracked)
    if primary.root is None:  # an S3 primary: its own trash in the bucket
        from archive_pipelines.storage.gc_bucket import collect_from_bucket  # boto3 on S3 only

        collect_from_bucket(catalog, primary, report, layout=layout, grace_hours=grace,
                            batch=batch, on_item=on_item)
        _remove_retired(report, layout=layout, grace_hours=grace, on_item=on_item,
                        planned=Counter())
        return report
    trash = primary.root / TRASH
    # Names the dry run would unlink per inode: a retired folder's file then counts as the
    # real run will find it, after the blob pass took the store's name of that inode.
    planned: Counter[tuple[int, int]] = Counter()

    def note(tally: Tally, kind: Kind, sha: str, *, fate: _Fate) -> None:
        tally.count += 1
        if fate.held:
            tally.held += 1
            tally.held_bytes += fate.size
        else:
            tally.bytes += fate.size
        if dry_run:
            planned[fate.inode] += fate.names
        if on_item is not None:
            on_item(GcItem(kind, sha, fate.size, fate.held))

    def take(tally: Tally, kind: Kind, blob_id: int, *, sha: str) -> None:
        if dry_run:
            outcome: _Fate | str | None = _fate(primary, farm, sha)
        else:
            trash.mkdir(exist_ok=True)
            outcome = _collect_one(catalog, primary, farm, blob_id=blob_id, sha=sha, trash=trash)
        if outcome is None:
            report.already_gone += 1
        elif outcome == "revived":
            report.revived += 1
        elif isinstance(outcome, _Fate):
            note(tally, kind, sha, fate=outcome)

    cutoff = utcnow() - timedelta(hours=grace)
    for rows in unreferenced_blobs(catalog, primary, cutoff, batch=batch):
        report.candidates += len(rows)
        crawl_bodies = pending_body_hashes(catalog, layout.root)
        for blob_id, sha in rows:
            if sha in crawl_bodies:
                report.kept_for_crawl += 1
                continue
            take(report.blobs, "blob", blob_id, sha=sha)
    if untracked:
        crawl_bodies = pending_body_hashes(catalog, layout.root)
        seen = 0
        for sha, ctime in _untracked_files(catalog, primary, grace):
            seen += 1
            if seen % batch == 0:
                crawl_bodies = pending_body_hashes(catalog, layout.root)
            if sha in crawl_bodies:
                report.kept_for_crawl += 1
                continue
            if dry_run:
                fate = _fate(primary, farm, sha)
                if fate is not None:
                    note(report.untracked, "untracked", sha, fate=fate)
                continue
            tracked = _track(catalog, primary, sha, ctime=ctime)
            if tracked is not None:  # else an ingest recorded it meanwhile: not garbage
                take(report.untracked, "untracked", tracked, sha=sha)

    _remove_retired(report, layout=layout, grace_hours=grace, on_item=on_item, planned=planned)
    return report


def _remove_retired(report: GcReport, *, layout: DataDir, grace_hours: float,
                    on_item: Callable[[GcItem], object] | None,
                    planned: Counter[tuple[int, int]]) -> None:
    """Migrated legacy folders past the grace (`storage.retired`), into `report`."""

    def folder(path: str, usage: FolderUsage) -> None:
        if on_item is not None:
            on_item(GcItem("folder", path, usage.bytes_freed))

    retired = remove_retired(layout.migrated, grace_hours=grace_hours, dry_run=report.dry_run,
                             unlinked=planned, on_folder=folder)
    report.folders = Tally(retired.folders, retired.bytes_freed, retired.held,
                           retired.bytes_held)
    report.errors += retired.errors


def _untracked_files(catalog: Catalog, primary: PrimaryStore, grace_hours: float
                     ) -> Iterator[tuple[str, float]]:
    """The decision for untracked files: blob files in the primary with no catalog row
    (left by an interrupted ingest), whose inode changed before the grace; (sha, ctime).

    Opt-in: a crawled body is untracked until its segment is ingested (`captures`); the
    caller keeps those that crawl records name.

    Age is the inode change time: a hardlinked blob keeps its source's old mtime, while
    linking it (and making it read-only) sets its ctime.
    """
    horizon = time.time() - grace_hours * 3600
    for sha in untracked_hashes(catalog, primary):
        try:
            ctime = os.lstat(_blob_path(primary.store, sha)).st_ctime
        except FileNotFoundError:
            continue
        if ctime < horizon:
            yield sha, ctime


def _blob_path(store: BlobStore, sha: str) -> Path:
    """The blob's file in the local primary (this module's passes run on a local one)."""
    path = store.local_path(sha)
    if path is None:
        raise TypeError(f"store {store.name!r} has no local files")
    return path


@dataclass(frozen=True)
class _Fate:
    """What removing a blob file from the store does: `size` bytes freed, or kept by
    another path when `held`; `names` the store's names of the inode (its own and the
    aliases that are the same inode) that the removal unlinks."""

    size: int
    held: bool
    inode: tuple[int, int]
    names: int


def _fate(primary: PrimaryStore, farm: ViewFarm, sha: str) -> _Fate | None:
    """The outcome rule for a blob file, shared by the dry run and (just before it acts) the
    real run; None when the file is already gone."""
    try:
        st = os.lstat(_blob_path(primary.store, sha))
    except FileNotFoundError:
        return None
    names = 1
    for ext in farm.aliases.extensions(sha):
        try:
            names += os.path.samestat(os.lstat(farm.aliases.path(sha, ext)), st)
        except FileNotFoundError:
            continue
    return _Fate(st.st_size, st.st_nlink > names, (st.st_dev, st.st_ino), names)


def _track(catalog: Catalog, primary: PrimaryStore, sha: str, *, ctime: float) -> int | None:
    """Give an untracked blob file a catalog row (ref_count 0 since its ctime, present on
    the primary) so that it is collected, and can be revived, like any unreferenced blob.
    None when a row appeared meanwhile (an ingest recorded the file: not garbage)."""
    store_id = primary.store_id
    size = _logical_size(primary.store, sha)
    if size is None:
        return None
    since = datetime.fromtimestamp(ctime, UTC)
    with catalog.transaction() as tx:
        return tx.blobs.track_blob(sha256=sha, size=size, since=since, store_id=store_id)


def _logical_size(store: BlobStore, sha: str) -> int | None:
    """The blob's size as the catalog records it (decoded, for a compressing store); None
    when the file is gone."""
    try:
        stored = os.lstat(_blob_path(store, sha)).st_size
    except FileNotFoundError:
        return None
    if store.codec == "raw":
        return stored
    size = 0
    try:
        with store.open(sha) as reader:
            while chunk := reader.read(1 << 20):
                size += len(chunk)
    except BlobNotFound:
        return None
    except BlobIntegrityError:  # damaged: garbage all the same; its stored size will do
        return stored
    return size


def _collect_one(catalog: Catalog, primary: PrimaryStore, farm: ViewFarm, *, blob_id: int, sha: str,
                 trash: Path
                 ) -> _Fate | Literal["revived", "skipped"] | None:
    """Remove one unreferenced blob's primary file: its `_fate`, "revived" when it was
    referenced again meanwhile (the file stays), "skipped" when it could not be claimed (no
    longer unreferenced, or not present), None when the file was already gone."""
    store_id = primary.store_id
    with catalog.transaction() as tx:
        # Lock the blob row and mark its copy `missing` (see `claim_unreferenced`): an
        # ingest adding a reference meanwhile then rewrites the file.
        claimed = tx.blobs.claim_unreferenced(blob_id=blob_id, store_id=store_id)
    if not claimed:
        return "skipped"
    final = _blob_path(primary.store, sha)
    fate = _fate(primary, farm, sha)
    parked: Path | None = trash / f"{sha}.{os.getpid()}"
    try:
        os.replace(final, parked)  # type: ignore[arg-type]
    except FileNotFoundError:
        parked = None  # already gone: the catalog now says so
    aliases = farm.aliases.remove(sha)  # the views' hard links would keep the bytes alive
    with catalog.transaction() as tx:
        refs = tx.blobs.ref_count(blob_id)
        if refs:
            # Re-referenced meanwhile: put the file back (an ingest may already have).
            tx.copies.set_copy_status(blob_id=blob_id, store_id=store_id, status="present",
                            mtime=utcnow())
            if parked is not None:
                if final.exists():
                    parked.unlink()
                else:
                    os.replace(parked, final)
            if final.exists():
                for ext in dict.fromkeys(("", *aliases)):
                    farm.aliases.ensure(sha, final, ext=ext)
            return "revived"
    if parked is None:
        return None
    parked.unlink()
    return fate
