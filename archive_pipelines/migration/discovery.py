"""`import_orphans`: one streaming, resumable pass over archive/ that adopts legacy folders.

Per folder (sorted by name, from `resume_from` on): lock it, load index.json, look it up in
ArchiveBox's index.sqlite3, find or create its snapshot and reconcile (catalog wins); the
reconciled values live in the catalog, the folder is only read. Folders that cannot be
adopted move to `invalid/YYYYMMDD/` with the reason (never deleted); every other entry of
archive/ that is not ours (a symlink, a file) is reported. Then snapshots only
index.sqlite3 knows, with no folder at all, are imported as `0.x` records without files.

Memory: the sorted list of names, plus one batch.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from archive_pipelines.archive_error import ArchiveError
from archive_pipelines.catalog import Catalog
from archive_pipelines.counts import Counts, MetadataValue
from archive_pipelines.datadir import DataDir
from archive_pipelines.legacy.index_json import InvalidFolder, LegacyIndex, load_index
from archive_pipelines.legacy.sqlite_index import SQLITE_NAME, ArchiveBoxIndex, ArchiveBoxSnapshot
from archive_pipelines.legacy.versions import V0_4
from archive_pipelines.migration.adopt import (
    DUPLICATE,
    ID_TAKEN,
    IMPORTED,
    Adopted,
    FolderRecord,
    adopt_batch,
)
from archive_pipelines.migration.folders import (
    folder_lock,
    invalid_day,
    is_snapshot_name,
    move_to_invalid,
    other_entries,
    snapshot_folder_names,
)
from archive_pipelines.migration.fs_versions import NO_FOLDER
from archive_pipelines.settings.model import ViewSettings

MAX_ERRORS = 1000  # messages kept; `error_count` counts them all


@dataclass
class ImportReport(Counts):
    """What one import pass did. `imported` counts new snapshots (duplicates and 0.x records
    included); `reconciled` counts folders matched to a snapshot the catalog had."""

    processed: int = 0
    imported: int = 0
    reconciled: int = 0
    invalid: int = 0
    duplicates: int = 0
    sqlite_only: int = 0
    skipped: int = 0
    # (archive/ entry, why) for every entry left in place unadopted: an error, or not ours
    # to touch (symlinks, files). A failure: `update` lists them and exits 1.
    problems: list[tuple[str, str]] = field(default_factory=list)
    # (archive/ entry, why, where it went) for folders moved to invalid/: accounted for.
    moved_to_invalid: list[tuple[str, str, str]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    error_count: int = 0
    warnings: list[str] = field(default_factory=list)  # fields dropped or repaired, adopted anyway
    warning_count: int = 0
    last_timestamp: str = ""  # the last folder looked at: resume_from it to go on from there

    def error(self, message: str, entry: str | None = None) -> None:
        self.error_count += 1
        if len(self.errors) < MAX_ERRORS:
            self.errors.append(message)
            if entry is not None:
                self.problems.append((entry, message))

    def warn(self, message: str) -> None:
        self.warning_count += 1
        if len(self.warnings) < MAX_ERRORS:
            self.warnings.append(message)

    def as_metadata(self) -> dict[str, MetadataValue]:
        return {"processed": self.processed, "imported": self.imported,
                "reconciled": self.reconciled, "invalid": self.invalid,
                "duplicates": self.duplicates, "errors": self.error_count,
                "last_timestamp": self.last_timestamp}

    def log_lines(self) -> list[str]:
        """What a run log says: folders looked at and what became of them."""
        line = (f"{self.processed:,} folder(s) of archive/ looked at: {self.imported:,} "
                f"adopted as new snapshots, {self.reconciled:,} matched to known ones, "
                f"{self.duplicates:,} duplicate(s), {self.invalid:,} moved to invalid/")
        if self.error_count:
            line += f"; {self.error_count:,} left in place with an error"
        return [line]


DEFAULT_USER = ViewSettings.model_fields["default_user"].default


def import_orphans(catalog: Catalog, layout: DataDir, *, default_user: str = DEFAULT_USER,
                   resume_from: str = "", batch_size: int = 200,
                   archivebox_index: Path | None = None, read_archivebox_index: bool = True,
                   progress: Callable[[str], object] | None = None) -> ImportReport:
    """Adopt every folder of archive/ named >= `resume_from`; one transaction per batch.

    `archivebox_index` defaults to `<data>/index.sqlite3` when that file exists (opened
    read-only); `read_archivebox_index=False` ignores it. Re-running is safe: adopted
    folders are reconciled again, which changes nothing the second time. Snapshots the
    folders do not name a creator of are `default_user`'s (the `views.default_user` setting).
    """
    report = ImportReport()
    archive = layout.archive
    abx = _open_index(layout, archivebox_index, enabled=read_archivebox_index, report=report)
    day = invalid_day()
    pending: list[FolderRecord] = []
    try:
        for name, what in other_entries(archive, resume_from):
            report.error(f"{name}: {what}; not a snapshot folder, left as it is", name)
        for name in snapshot_folder_names(archive, resume_from):
            report.processed += 1
            report.last_timestamp = name
            record = _read_folder(catalog, layout, archive / name, abx=abx, day=day, report=report)
            if record is not None:
                pending.append(record)
            if len(pending) >= batch_size:
                _commit(catalog, default_user, pending, report=report)
                pending = []
            if progress:
                progress(name)
        _commit(catalog, default_user, pending, report=report)
        if abx is not None:
            _import_folderless(catalog, default_user, layout, abx=abx, resume_from=resume_from,
                               batch_size=batch_size, report=report, progress=progress)
    finally:
        if abx is not None:
            abx.close()
    return report


def _open_index(layout: DataDir, path: Path | None, *, enabled: bool,
                report: ImportReport) -> ArchiveBoxIndex | None:
    if not enabled:
        return None
    if path is None:
        path = layout.root / SQLITE_NAME
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


def _read_folder(catalog: Catalog, layout: DataDir, folder: Path, *, abx: ArchiveBoxIndex | None, day: str,
                 report: ImportReport) -> FolderRecord | None:
    with folder_lock(folder) as problem:
        if problem is not None:
            report.skipped += 1
            if problem != "busy":  # another run is adopting it right now
                report.error(f"{folder.name}: {problem}; skipped", folder.name)
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
            report.error(f"{folder.name}: {loaded.detail}; left in place", folder.name)
            return None
        if known is not None:
            # All legacy layouts are the same flat folder: the oldest label fits any of them.
            return FolderRecord(folder, V0_4, sqlite=known)
        if _catalog_knows(catalog, folder.name):
            report.skipped += 1
            report.error(f"{folder.name}: {loaded.detail}, but the catalog has this snapshot; "
                         "left in place", folder.name)
            return None
        try:
            moved = move_to_invalid(folder, layout.invalid, day)
        except OSError as exc:
            report.error(f"{folder.name}: {loaded.reason} ({loaded.detail}); cannot move to invalid/: "
                         f"{exc.strerror or exc}; left in place", folder.name)
            return None
        report.invalid += 1
        where = str(moved.relative_to(layout.root))
        report.warn(f"{folder.name}: {loaded.reason} ({loaded.detail}); moved to {where}")
        if len(report.moved_to_invalid) < MAX_ERRORS:
            report.moved_to_invalid.append((folder.name, f"{loaded.reason} ({loaded.detail})", where))
        _note_invalid(moved, f"{loaded.reason}: {loaded.detail}")
        return None


def _catalog_knows(catalog: Catalog, timestamp: str) -> bool:
    with catalog.reading() as tx:
        return bool(tx.adoption.snapshots_by_timestamp([timestamp]))


def _commit(catalog: Catalog, user: str, records: Sequence[FolderRecord], *, report: ImportReport) -> None:
    """Adopt a batch in one transaction; if it fails, record by record to isolate the bad one."""
    if not records:
        return
    try:
        with catalog.transaction() as tx:
            adopted = adopt_batch(tx, records, created_by=user)
    except Exception as exc:  # isolate the record that fails, adopt the others
        if len(records) == 1:
            report.error(f"{records[0].timestamp}: cannot adopt: {str(exc).splitlines()[0][:300]}",
                         records[0].timestamp)
            return
        adopted = []
        for record in records:
            # Twice: a concurrent run may have adopted the same folder meanwhile (its id is
            # ArchiveBox's, so the insert clashes); the second try reconciles with that row.
            for attempt in (1, 2):
                try:
                    with catalog.transaction() as tx:
                        adopted.extend(adopt_batch(tx, [record], created_by=user))
                    break
                except Exception as exc:  # one bad record must not stop the pass
                    if attempt == 2:
                        report.error(f"{record.timestamp}: cannot adopt: "
                                     f"{str(exc).splitlines()[0][:300]}", record.timestamp)
    for item in adopted:
        _count(item, report)


def _count(item: Adopted, report: ImportReport) -> None:
    if item.outcome == ID_TAKEN:
        report.skipped += 1
        report.error(f"{item.record.timestamp}: {item.problem}", item.record.timestamp)
    elif item.outcome in (IMPORTED, DUPLICATE):
        report.imported += 1
        report.duplicates += item.outcome == DUPLICATE
        report.sqlite_only += item.record.fs_version == NO_FOLDER
    else:
        report.reconciled += 1


def _note_invalid(moved: Path, reason: str) -> None:
    """Append why a folder was moved to `invalid/YYYYMMDD/` to `invalid/YYYYMMDD.reasons.txt`
    (`<name>\t<reason>` per line): the folder itself is never written into."""
    log = moved.parent.with_name(moved.parent.name + ".reasons.txt")
    with contextlib.suppress(OSError), open(log, "a", encoding="utf-8") as handle:
        handle.write(f"{moved.name}\t{reason}\n")  # the move is reported anyway


def _import_folderless(catalog: Catalog, user: str, layout: DataDir, *, abx: ArchiveBoxIndex,
                       resume_from: str, batch_size: int,
                       report: ImportReport, progress: Callable[[str], object] | None) -> None:
    archive = layout.archive
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
                _commit(catalog, user, pending, report=report)
                pending = []
            if progress:
                progress(name)
    except sqlite3.Error as exc:
        report.error(f"{abx.path}: reading stopped: {exc}")
    _commit(catalog, user, pending, report=report)
