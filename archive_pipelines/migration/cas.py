"""The one way a legacy folder's files enter the blob store: ingest, verify, retire, link.

Used by every entry point (`update --migrate-fs`, `migrate-to-cas`, the `snapshots` and
`blobs` assets, `migrate_fs_job`, `migrate_to_cas_job`, the lazy-migration sensor), always
through `migration.steps.migrate_batch`.

1. Ingest every regular file of every folder at its own path (`index.html`,
   `readability/content.html`, `example.com/a/index.html`...), the extractor read off the
   path as metadata (`legacy.snapshot_folder.extractor_of`): hard links into the store when possible,
   dedup, exact ref counts, views. Nothing in the folder is written or moved. A path the
   catalog already holds with other bytes is never replaced: the original stays referenced,
   and the folder stays (reported). Symlinks and empty folders are recorded in
   `snapshot_entry`; empty folders and symlinks that point inside the folder are recreated
   in the views, a symlink that points outside is only reported.
2. Verify per snapshot (`storage.legacy_finish`): every catalog file row's blob exists with
   its size, and every file of the folder is recorded with a blob that hashes, like the
   file itself, to the recorded sha256 (content, not size: with a hard link the file *is*
   the blob, and an edit made through the legacy path shows up here).
3. Only for a snapshot where all of that holds (and `retire`): move the folder to
   `migrated/` in one rename (gc deletes it after the grace period, see `storage.retired`)
   and leave `archive/<timestamp>` as a compatibility symlink into `by_timestamp/`, so
   `archive/<timestamp>/<path>` opens the same bytes as before.
Steps 2 and 3 run in the ingest's worker processes.
On a primary that is not a local folder (S3) every file is uploaded (a copy), step 2 reads
each blob back from the bucket and rehashes it (`storage.legacy_finish.verify_kept`), and
step 3 never happens: the folder stays exactly as it was (it is the user's disk, and there
are no views to link it into); a verified snapshot still reaches fs_version `cas`.
The caller commits fs_version `cas` for the snapshots reported done, after all of this.
A snapshot with any problem keeps its folder untouched and is reported.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from archive_pipelines.blobstore import LocalBlobStore
from archive_pipelines.catalog import Catalog, SnapshotRow
from archive_pipelines.datadir import DataDir
from archive_pipelines.legacy.snapshot_folder import (
    FolderDir,
    FolderFile,
    FolderLink,
    display_path,
    iter_folder,
)
from archive_pipelines.migration.folders import is_partial
from archive_pipelines.storage.file_ingest import IngestItem, IngestReport, ingest_files
from archive_pipelines.storage.file_work import FileWork
from archive_pipelines.storage.legacy_finish import FinishTask, verify_and_finish, verify_kept
from archive_pipelines.storage.primary import PrimaryStore
from archive_pipelines.storage.snapshot_places import places_for
from archive_pipelines.views import UnsafePathError, ViewSet, validate_relative_path, view_dir

_LISTING_THREADS = 4  # folders listed at once (threads: the listing waits on the disk)


@dataclass
class CasOutcome:
    """One snapshot's `to_cas`: `done` means its files are in the store and its folder linked."""

    snapshot_id: str
    done: bool = False
    ingested: int = 0
    links: int = 0  # symlinks recorded
    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)  # reported; the snapshot migrates anyway


@dataclass
class _Listing:
    items: list[IngestItem]
    links: list[FolderLink]
    folders: list[FolderDir]


def migrate_to_cas_batch(catalog: Catalog, primary: PrimaryStore, views: ViewSet, *, work: FileWork,
                         layout: DataDir, rows: Sequence[SnapshotRow], retire: bool = True,
                         ingest_batch_size: int
                         ) -> tuple[dict[str, CasOutcome], IngestReport]:
    """Run `to_cas` for snapshots whose folders the caller has locked; returns each one's
    outcome and the batch's ingest report. `retire=False` stores and records everything but
    leaves the folders in place (nothing is done)."""
    archive = layout.archive
    outcomes = {row.id: CasOutcome(row.id) for row in rows}
    listings: dict[str, _Listing] = {}

    def listed(row: SnapshotRow) -> _Listing | None:
        folder = archive / row.timestamp
        if not os.path.isdir(folder) or os.path.islink(folder):
            return None
        return _collect(row.id, folder, row.url, outcome=outcomes[row.id])

    def collected() -> Iterator[IngestItem]:
        """Each folder's files, in order, while the ingest stores the ones before.

        Listing a folder that is not in the page cache is mostly waiting for the disk (py-spy:
        ~40% of the parent's samples were in scandir), so threads list the folders ahead of it.
        """
        with ThreadPoolExecutor(_LISTING_THREADS, thread_name_prefix="to-cas-list") as pool:
            # map yields in order and cancels what is not listed yet if the ingest stops early
            for row, found in zip(rows, pool.map(listed, rows), strict=True):
                if found is not None:
                    listings[row.id] = found
                    yield from found.items

    try:
        ingest = ingest_files(catalog, primary, views, work=work, items=collected(),
                              hardlink=primary.is_local, replace=False,
                              batch_size=ingest_batch_size)
        _record_entries(catalog, views, rows, listings=listings, outcomes=outcomes)
    except OSError as exc:  # e.g. the views cannot be written: nothing is removed, all retried
        for outcome in outcomes.values():
            outcome.errors.append(f"ingest: {exc.strerror or exc}")
        return outcomes, IngestReport()
    with catalog.reading() as tx:
        records = tx.adoption.file_records([row.id for row in rows])
    tasks = []
    for row in rows:
        listing = listings.get(row.id)
        prefix = f"{archive / row.timestamp}/"
        tasks.append(FinishTask(
            row.timestamp, layout.migrated,
            None if listing is None else tuple((i.relative_path, i.source) for i in listing.items),
            tuple((r.relative_path, r.sha256, r.size) for r in records[row.id]),
            tuple(e for e in ingest.errors if e.startswith(prefix)),
            links=() if listing is None else tuple(link.rel_path for link in listing.links),
            retire=retire and not outcomes[row.id].errors))
    if not primary.is_local:
        problems = _verify_kept(primary, work, archive=archive, tasks=tasks)
    # Stats, a hash per file, a rename and a link per snapshot: the ingest's worker
    # processes take the snapshots in parallel.
    elif work.ingest_processes > 1 and len(tasks) > 1:
        problems = work.file_workers().map(verify_and_finish, tasks)
    else:
        store = primary.store
        assert isinstance(store, LocalBlobStore)  # a local primary is a LocalBlobStore
        problems = [verify_and_finish(store, views.farm, task) for task in tasks]
    for row, found in zip(rows, problems, strict=True):
        outcome = outcomes[row.id]
        outcome.ingested = len(listings[row.id].items) if row.id in listings else 0
        outcome.errors += found
        outcome.done = retire and not outcome.errors
    return outcomes, ingest


def _verify_kept(primary: PrimaryStore, work: FileWork, *, archive: Path,
                 tasks: list[FinishTask]) -> list[list[str]]:
    """Each snapshot's problems on a primary that is not a local folder (S3): every blob its
    files are recorded with is read back from the store and rehashed (once per batch, on the
    remote threads), every file of its folder hashed again; the folder stays as it is."""
    store = primary.store
    sizes = {sha: size for task in tasks for _rel, sha, size in task.records}
    hashes = sorted(sizes)
    checked = work.submit_remote(lambda sha: store.check(sha, expected_size=sizes[sha]), hashes)()
    blobs = dict(zip(hashes, checked, strict=True))
    return work.map_io(lambda task: verify_kept(archive, task, blobs=blobs), tasks)


def _collect(snapshot_id: str, folder: Path, url: str, *, outcome: CasOutcome) -> _Listing:
    found = _Listing([], [], [])
    base = f"{folder}/"  # string paths: a Path per file cost more than the rest of this
    for entry in iter_folder(folder, url, sizes=False):
        if isinstance(entry, FolderFile):
            if is_partial(entry.rel_path):
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(base + entry.rel_path)  # a temp file of ours, left by a crash
                continue
            found.items.append(IngestItem(snapshot_id, entry.extractor, entry.rel_path,
                                          base + entry.rel_path))
        elif isinstance(entry, FolderLink):
            found.links.append(entry)
        elif isinstance(entry, FolderDir):
            found.folders.append(entry)
        else:
            outcome.errors.append(f"{display_path(entry.rel_path)}: {entry.reason}")
    return found


def _record_entries(catalog: Catalog, views: ViewSet, rows: Sequence[SnapshotRow],
                    *, listings: dict[str, _Listing],
                    outcomes: dict[str, CasOutcome]) -> None:
    """Symlinks and empty folders found in the folders: a `snapshot_entry` row each. Empty
    folders and symlinks pointing inside their folder are recreated in the file view; the
    other symlinks are reported (never followed)."""
    rows_by_id = {row.id: row for row in rows}
    wanted: dict[str, list[tuple[str, str, str | None, bool]]] = {}
    for sid, listing in listings.items():
        for empty in listing.folders:
            try:
                wanted.setdefault(sid, []).append(
                    (validate_relative_path(empty.rel_path), "folder", None, True))
            except UnsafePathError as exc:
                outcomes[sid].errors.append(f"folder {display_path(empty.rel_path)}: {exc}")
        for link in listing.links:
            try:
                rel = validate_relative_path(link.rel_path)
            except UnsafePathError as exc:
                outcomes[sid].errors.append(f"symlink {display_path(link.rel_path)}: {exc}")
                continue
            inside = link.inside
            wanted.setdefault(sid, []).append((rel, "symlink", link.target, inside))
            outcomes[sid].links += 1
            if not inside:
                outcomes[sid].warnings.append(
                    f"archive/{rows_by_id[sid].timestamp}/{display_path(rel)}: symlink to "
                    f"{display_path(link.target)!r} points outside the snapshot; recorded, "
                    "not kept in the views")
    if not wanted:
        return
    with catalog.transaction() as tx:
        tx.adoption.record_entries(wanted)
        places = places_for(tx, list(wanted))
    home = views.file_view
    if home is None:
        return
    for sid, entries in wanted.items():
        folder = view_dir(home, places[sid])
        for rel, _kind, target, inside in entries:
            if inside and views.farm.ensure_entry(f"{folder}/{rel}", target) == "conflict":
                outcomes[sid].errors.append(f"{display_path(rel)}: something else is at its "
                                            "place in the views")
