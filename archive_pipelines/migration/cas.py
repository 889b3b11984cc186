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
The caller commits fs_version `cas` for the snapshots reported done, after all of this.
A snapshot with any problem keeps its folder untouched and is reported.
"""

from __future__ import annotations

import contextlib
import os
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from archive_pipelines.catalog import adoption
from archive_pipelines.catalog.adoption import FileRecord, SnapshotRow
from archive_pipelines.legacy.layout import FileMove, display_path, iter_organize
from archive_pipelines.migration.folders import is_partial
from archive_pipelines.storage.context import Storage
from archive_pipelines.storage.ingest import IngestItem, ingest_files
from archive_pipelines.storage.legacy_cas import (
    INDEX_EXTRACTOR,
    link_compat_folder,
    removal_problem,
    remove_files,
)
from archive_pipelines.storage.retired import retire_folder

MAX_PROBLEMS_SHOWN = 3


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
    for row in rows:
        folder = archive / row.timestamp
        if os.path.isdir(folder) and not os.path.islink(folder):
            items[row.id] = _collect(row.id, folder, row.url, outcomes[row.id])
            if outcomes[row.id].needs_organize:
                del items[row.id]
    try:
        ingest = ingest_files(storage, [item for group in items.values() for item in group],
                              allow_hardlink=True)
    except OSError as exc:  # e.g. the views cannot be written: nothing is removed, all retried
        for sid in items:
            outcomes[sid].errors.append(f"ingest: {exc.strerror or exc}")
        return outcomes
    ids = [row.id for row in rows]
    with storage.read_session() as session:
        records = adoption.file_records(session, ids)
    for row in rows:
        outcome = outcomes[row.id]
        folder = archive / row.timestamp
        if outcome.needs_organize:
            continue
        outcome.ingested = len(items.get(row.id, ()))
        problems = _catalog_problems(storage, records[row.id])
        if row.id in items:
            problems += _ingest_errors(ingest.errors, folder)
            problems += _unverified(storage, items[row.id], records[row.id])
        elif os.path.islink(folder):
            if not os.readlink(folder).startswith("by_timestamp/"):
                problems.append(f"archive/{row.timestamp} is a symlink to {os.readlink(folder)!r}, "
                                "not a compatibility link; left alone")
        elif not records[row.id]:
            problems.append("folder missing and no files recorded; nothing to link")
        if problems or outcome.errors:
            outcome.errors += problems[:MAX_PROBLEMS_SHOWN]
            if len(problems) > MAX_PROBLEMS_SHOWN:
                outcome.errors.append(f"... and {len(problems) - MAX_PROBLEMS_SHOWN} more")
            continue
        try:
            _finish(storage, folder, items.get(row.id, []))
            outcome.done = True
        except OSError as exc:
            outcome.errors.append(f"cleanup: {exc.strerror or exc}")
    return outcomes


def _collect(snapshot_id: str, folder: Path, url: str, outcome: CasOutcome) -> list[IngestItem]:
    found: list[IngestItem] = []
    for entry in iter_organize(folder, url):
        if not isinstance(entry, FileMove):
            outcome.errors.append(f"{display_path(entry.rel_path)}: {entry.reason}")
        elif is_partial(entry.src_rel):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(folder / entry.src_rel)  # a temp file of ours, left by a crash
        else:
            top, _, rest = entry.dst_rel.partition("/")
            extractor, rel = (top, rest) if rest else (INDEX_EXTRACTOR, top)
            found.append(IngestItem(snapshot_id, extractor, rel, folder / entry.src_rel))
    clashes = [f"{ext}/{rel}" for (ext, rel), count in
               Counter((item.extractor, item.relative_path) for item in found).items() if count > 1]
    if clashes:
        outcome.needs_organize = True
        outcome.errors.append(f"several files want the name {display_path(clashes[0])}; "
                              "left for organize, which never overwrites")
    return found


def _short(message: str, folder: Path) -> str:
    return display_path(message.replace(f"{folder}/", "", 1))


def _ingest_errors(errors: Sequence[str], folder: Path) -> list[str]:
    prefix = f"{folder}/"
    return [_short(error, folder) for error in errors if error.startswith(prefix)]


def _catalog_problems(storage: Storage, records: Sequence[FileRecord]) -> list[str]:
    """Every file row must have its blob, with the catalog's size."""
    problems = []
    for record in records:
        try:
            size = os.stat(storage.primary.local_path(record.sha256)).st_size
        except FileNotFoundError:
            problems.append(f"{record.extractor}/{record.relative_path}: blob {record.sha256[:12]} missing")
            continue
        if size != record.size:
            problems.append(f"{record.extractor}/{record.relative_path}: blob size {size} != {record.size}")
    return problems


def _unverified(storage: Storage, items: Sequence[IngestItem],
                records: Sequence[FileRecord]) -> list[str]:
    recorded: Mapping[tuple[str, str], tuple[str, int]] = {
        (r.extractor, r.relative_path): (r.sha256, r.size) for r in records}
    problems = []
    for item in items:
        problem = removal_problem(storage, item, recorded.get((item.extractor, item.relative_path)))
        if problem is not None:
            problems.append(f"{item.extractor}/{display_path(item.relative_path)}: {problem}")
    return problems


def _finish(storage: Storage, folder: Path, items: Sequence[IngestItem]) -> None:
    """Move the verified folder aside (`storage.retired`; gc deletes it later) or, across
    filesystems, remove its files in place; then link `archive/<timestamp>`."""
    real_folder = os.path.isdir(folder) and not os.path.islink(folder)
    sources = [item.source for item in items]
    if real_folder and retire_folder(storage.layout, folder, sources) is None and \
            not remove_files(folder, sources):
        raise OSError(f"{folder.name} still holds files that were not migrated")
    if not os.path.lexists(folder):
        link_compat_folder(folder)
