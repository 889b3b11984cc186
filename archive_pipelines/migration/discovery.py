"""`import_orphans`: one streaming, resumable pass over archive/ that adopts legacy folders.

Per folder (sorted by name, from `resume_from` on): lock it, load index.json, look it up in
ArchiveBox's index.sqlite3, find or create its snapshot, reconcile (catalog wins), and after
the batch commits write the merged index.json back atomically. Folders that cannot be
adopted move to `invalid/YYYYMMDD/` (never deleted). Then snapshots only index.sqlite3
knows, with no folder at all, are imported as `0.x` records without files.

Memory: the sorted list of names, plus one batch.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from archive_pipelines.catalog import adoption
from archive_pipelines.errors import ArchiveError
from archive_pipelines.legacy.generate import SQLITE_NAME
from archive_pipelines.legacy.index_json import INDEX_FILENAME, InvalidFolder, LegacyIndex, load_index
from archive_pipelines.legacy.sqlite_index import ArchiveBoxIndex, ArchiveBoxSnapshot
from archive_pipelines.legacy.versions import V0_4
from archive_pipelines.migration.adopt import DUPLICATE, IMPORTED, Adopted, FolderRecord, adopt_batch
from archive_pipelines.migration.folders import (
    folder_lock,
    invalid_day,
    is_snapshot_name,
    move_to_invalid,
    snapshot_folder_names,
    write_atomically,
)
from archive_pipelines.migration.labels import NO_FOLDER
from archive_pipelines.storage.context import Storage

MAX_ERRORS = 1000  # messages kept; `error_count` counts them all


@dataclass
class ImportReport:
    """What one import pass did. `imported` counts new snapshots (duplicates and 0.x records
    included); `reconciled` counts folders matched to a snapshot the catalog had."""

    processed: int = 0
    imported: int = 0
    reconciled: int = 0
    invalid: int = 0
    duplicates: int = 0
    sqlite_only: int = 0
    index_rewritten: int = 0
    skipped: int = 0
    errors: list[str] = field(default_factory=list)
    error_count: int = 0
    warnings: list[str] = field(default_factory=list)  # fields dropped or repaired, adopted anyway
    warning_count: int = 0
    last_timestamp: str = ""  # the last folder looked at: resume_from it to go on from there

    def error(self, message: str) -> None:
        self.error_count += 1
        if len(self.errors) < MAX_ERRORS:
            self.errors.append(message)

    def warn(self, message: str) -> None:
        self.warning_count += 1
        if len(self.warnings) < MAX_ERRORS:
            self.warnings.append(message)


def import_orphans(storage: Storage, *, resume_from: str = "", batch_size: int = 200,
                   archivebox_index: Path | None = None, read_archivebox_index: bool = True,
                   progress: Callable[[str], object] | None = None) -> ImportReport:
    """Adopt every folder of archive/ named >= `resume_from`; one transaction per batch.

    `archivebox_index` defaults to `<data>/index.sqlite3` when that file exists (opened
    read-only); `read_archivebox_index=False` ignores it. Re-running is safe: adopted
    folders are reconciled again, which changes nothing the second time.
    """
    report = ImportReport()
    archive = storage.layout.archive
    abx = _open_index(storage, archivebox_index, read_archivebox_index, report)
    day = invalid_day()
    pending: list[FolderRecord] = []
    try:
        for name in snapshot_folder_names(archive, resume_from):
            report.processed += 1
            report.last_timestamp = name
            record = _read_folder(storage, archive / name, abx, day, report)
            if record is not None:
                pending.append(record)
            if len(pending) >= batch_size:
                _commit(storage, pending, report)
                pending = []
            if progress:
                progress(name)
        _commit(storage, pending, report)
        if abx is not None:
            _import_folderless(storage, abx, resume_from, batch_size, report, progress)
    finally:
        if abx is not None:
            abx.close()
    return report


def _open_index(storage: Storage, path: Path | None, enabled: bool,
                report: ImportReport) -> ArchiveBoxIndex | None:
    if not enabled:
        return None
    if path is None:
        path = storage.settings.data_dir / SQLITE_NAME
        if not path.is_file():
            return None
    try:
        return ArchiveBoxIndex(path)
    except ArchiveError as exc:
        report.error(f"{path}: not used: {exc}")
        return None


def _lookup(abx: ArchiveBoxIndex | None, name: str, report: ImportReport) -> ArchiveBoxSnapshot | None:
    if abx is None:
        return None
    try:
        return abx.get_by_timestamp(name)
    except sqlite3.Error as exc:
        report.error(f"{abx.path}: lookup of {name} failed: {exc}")
        return None


def _read_folder(storage: Storage, folder: Path, abx: ArchiveBoxIndex | None, day: str,
                 report: ImportReport) -> FolderRecord | None:
    with folder_lock(folder) as problem:
        if problem is not None:
            report.skipped += 1
            report.error(f"{folder.name}: {problem}; skipped")
            return None
        loaded: LegacyIndex | InvalidFolder
        if not is_snapshot_name(folder.name):
            loaded = InvalidFolder(folder, "bad_folder_name", "folder name is not a timestamp")
            known = None
        else:
            loaded = load_index(folder)
            known = _lookup(abx, folder.name, report)
        if isinstance(loaded, LegacyIndex):
            for warning in loaded.warnings:
                report.warn(f"{folder.name}: {warning}")
            if loaded.timestamp != folder.name:
                report.warn(f"{folder.name}: index.json says timestamp {loaded.timestamp}; "
                            "the folder name is the snapshot's timestamp")
            return FolderRecord(folder, loaded.fs_version, index=loaded, sqlite=known)
        if loaded.reason == "unreadable":
            report.skipped += 1
            report.error(f"{folder.name}: {loaded.detail}; left in place")
            return None
        if known is not None:
            # All legacy layouts are the same flat folder: the oldest label fits any of them.
            return FolderRecord(folder, V0_4, sqlite=known, write_index=loaded.reason == "missing_index")
        if _catalog_knows(storage, folder.name):
            report.skipped += 1
            report.error(f"{folder.name}: {loaded.detail}, but the catalog has this snapshot; left in place")
            return None
        try:
            moved = move_to_invalid(folder, storage.layout.invalid, day)
        except OSError as exc:
            report.error(f"{folder.name}: {loaded.reason} ({loaded.detail}); cannot move to invalid/: "
                         f"{exc.strerror or exc}; left in place")
            return None
        report.invalid += 1
        report.error(f"{folder.name}: {loaded.reason} ({loaded.detail}); moved to "
                     f"{moved.relative_to(storage.layout.root)}")
        return None


def _catalog_knows(storage: Storage, timestamp: str) -> bool:
    with storage.read_session() as session:
        return bool(adoption.snapshots_by_timestamp(session, [timestamp]))


def _commit(storage: Storage, records: Sequence[FolderRecord], report: ImportReport) -> None:
    """Adopt a batch in one transaction; if it fails, record by record to isolate the bad one."""
    if not records:
        return
    user = storage.settings.views.default_user
    try:
        with storage.session() as session:
            adopted = adopt_batch(session, records, created_by=user)
    except Exception as exc:  # isolate the record that fails, adopt the others
        if len(records) == 1:
            report.error(f"{records[0].timestamp}: cannot adopt: {str(exc).splitlines()[0][:300]}")
            return
        adopted = []
        for record in records:
            try:
                with storage.session() as session:
                    adopted.extend(adopt_batch(session, [record], created_by=user))
            except Exception as exc:  # one bad record must not stop the pass
                report.error(f"{record.timestamp}: cannot adopt: {str(exc).splitlines()[0][:300]}")
    for item in adopted:
        _count(item, report)
        if item.index_bytes is not None:
            _write_index(item, report)


def _count(item: Adopted, report: ImportReport) -> None:
    if item.outcome in (IMPORTED, DUPLICATE):
        report.imported += 1
        report.duplicates += item.outcome == DUPLICATE
        report.sqlite_only += item.record.fs_version == NO_FOLDER
    else:
        report.reconciled += 1


def _write_index(item: Adopted, report: ImportReport) -> None:
    folder = item.record.folder
    assert item.index_bytes is not None
    with folder_lock(folder) as problem:
        if problem is not None:  # e.g. migrated meanwhile: the catalog holds the merged values
            report.error(f"{folder.name}: index.json not rewritten: {problem}")
            return
        try:
            write_atomically(folder / INDEX_FILENAME, item.index_bytes)
            report.index_rewritten += 1
        except OSError as exc:
            report.error(f"{folder.name}: index.json not rewritten: {exc.strerror or exc}")


def _import_folderless(storage: Storage, abx: ArchiveBoxIndex, resume_from: str, batch_size: int,
                       report: ImportReport, progress: Callable[[str], object] | None) -> None:
    archive = storage.layout.archive
    pending: list[FolderRecord] = []
    try:
        for snapshot in abx.iter_snapshots(batch_size=batch_size):
            name = snapshot.timestamp
            if name < resume_from or not is_snapshot_name(name):
                continue
            folder = archive / name
            if folder.exists() or folder.is_symlink():
                continue  # the folder pass handled it
            pending.append(FolderRecord(folder, NO_FOLDER, sqlite=snapshot))
            if len(pending) >= batch_size:
                _commit(storage, pending, report)
                pending = []
            if progress:
                progress(name)
    except sqlite3.Error as exc:
        report.error(f"{abx.path}: reading stopped: {exc}")
    _commit(storage, pending, report)
