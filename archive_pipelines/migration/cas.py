"""The `to_cas` step for a batch of folders: ingest, verify, remove, link.

1. Ingest every file of every folder under its organized name (one `ingest_files` call:
   hard links into the store, dedup, exact ref counts, views): `<extractor>/<path>` as
   extractor + path, top-level files as extractor `index` (as `storage.legacy_cas` does).
   For an organized folder that is where the files are; a flat legacy folder goes straight
   from its flat paths to those names (`organize` in passing, nothing moved on disk) unless
   two files want the same name, which only a real `organize` can sort out.
2. Verify per snapshot: every catalog file row's blob exists with its size, and every file of
   the folder is recorded with a blob that is the same inode or hashes the same.
3. Only for a snapshot where all of that holds: move the folder to `migrated/` in one rename
   (gc deletes it after the grace period, see `storage.retired`) and leave
   `archive/<timestamp>` as a compatibility symlink into `by_timestamp/` (to the timestamp
   owner's folder, see `views.compat_link_target`).
Steps 2 and 3 are `storage.legacy_finish`, run in the ingest's worker processes.
The caller commits fs_version `cas` for the snapshots reported done, after all of this.
A snapshot with any problem keeps its folder untouched and is reported.
"""

from __future__ import annotations

import contextlib
import os
from collections import Counter
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from archive_pipelines.catalog import adoption
from archive_pipelines.catalog.adoption import SnapshotRow
from archive_pipelines.legacy.layout import FileMove, display_path, iter_organize
from archive_pipelines.migration.folders import is_partial
from archive_pipelines.storage.context import Storage
from archive_pipelines.storage.ingest import IngestItem, ingest_files
from archive_pipelines.storage.legacy_cas import INDEX_EXTRACTOR
from archive_pipelines.storage.legacy_finish import FinishTask, verify_and_finish

_LISTING_THREADS = 4  # folders listed at once (threads: the listing waits on the disk)


@dataclass
class CasOutcome:
    """One snapshot's `to_cas`: `done` means its files are in the store and its folder linked."""

    snapshot_id: str
    done: bool = False
    needs_organize: bool = False  # a flat folder that only a real `organize` can sort out
    ingested: int = 0
    errors: list[str] = field(default_factory=list)


def migrate_to_cas_batch(storage: Storage, rows: Sequence[SnapshotRow]) -> dict[str, CasOutcome]:
    """Run `to_cas` for snapshots (organized or flat) whose folders the caller has locked."""
    archive = storage.layout.archive
    outcomes = {row.id: CasOutcome(row.id) for row in rows}
    items: dict[str, list[IngestItem]] = {}

    def listed(row: SnapshotRow) -> list[IngestItem] | None:
        folder = archive / row.timestamp
        if not os.path.isdir(folder) or os.path.islink(folder):
            return None
        return _collect(row.id, folder, row.url, outcomes[row.id])

    def collected() -> Iterator[IngestItem]:
        """Each folder's files, in order, while the ingest stores the ones before.

        Listing a folder that is not in the page cache is mostly waiting for the disk (py-spy:
        ~40% of the parent's samples were in scandir), so threads list the folders ahead of it.
        """
        with ThreadPoolExecutor(_LISTING_THREADS, thread_name_prefix="to-cas-list") as pool:
            # map yields in order and cancels what is not listed yet if the ingest stops early
            for row, found in zip(rows, pool.map(listed, rows), strict=True):
                if found is not None and not outcomes[row.id].needs_organize:
                    items[row.id] = found
                    yield from found

    try:
        ingest = ingest_files(storage, collected(), allow_hardlink=True)
    except OSError as exc:  # e.g. the views cannot be written: nothing is removed, all retried
        for outcome in outcomes.values():
            if not outcome.needs_organize:
                outcome.errors.append(f"ingest: {exc.strerror or exc}")
        return outcomes
    with storage.read_session() as session:
        records = adoption.file_records(session, [row.id for row in rows])
    finishing = [row for row in rows if not outcomes[row.id].needs_organize]
    tasks = [FinishTask(
        row.timestamp, storage.layout.migrated,
        None if row.id not in items else tuple(
            (item.extractor, item.relative_path, item.source) for item in items[row.id]),
        tuple((r.extractor, r.relative_path, r.sha256, r.size) for r in records[row.id]),
        tuple(e for e in ingest.errors if e.startswith(f"{archive / row.timestamp}/")),
        retire=not outcomes[row.id].errors)
        for row in finishing]
    # Stats, a hash where the store's file is not the legacy one, a rename and a link per
    # snapshot: the ingest's worker processes take the snapshots in parallel.
    if storage.ingest_processes > 1 and len(tasks) > 1:
        problems = storage.file_workers().map(verify_and_finish, tasks)
    else:
        problems = [verify_and_finish(storage.primary, storage.farm, task) for task in tasks]
    for row, found in zip(finishing, problems, strict=True):
        outcome = outcomes[row.id]
        outcome.ingested = len(items.get(row.id, ()))
        outcome.errors += found
        outcome.done = not outcome.errors
    return outcomes


def _collect(snapshot_id: str, folder: Path, url: str, outcome: CasOutcome) -> list[IngestItem]:
    found: list[IngestItem] = []
    base = f"{folder}/"  # string paths: a Path per file cost more than the rest of this
    for entry in iter_organize(folder, url, sizes=False):
        if not isinstance(entry, FileMove):
            outcome.errors.append(f"{display_path(entry.rel_path)}: {entry.reason}")
        elif is_partial(entry.src_rel):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(folder / entry.src_rel)  # a temp file of ours, left by a crash
        else:
            top, _, rest = entry.dst_rel.partition("/")
            extractor, rel = (top, rest) if rest else (INDEX_EXTRACTOR, top)
            found.append(IngestItem(snapshot_id, extractor, rel, base + entry.src_rel))
    clashes = [f"{ext}/{rel}" for (ext, rel), count in
               Counter((item.extractor, item.relative_path) for item in found).items() if count > 1]
    if clashes:
        outcome.needs_organize = True
        outcome.errors.append(f"several files want the name {display_path(clashes[0])}; "
                              "left for organize, which never overwrites")
    return found


