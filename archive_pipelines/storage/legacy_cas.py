"""`migrate_to_cas`: move legacy `archive/<timestamp>/<extractor>/...` folders into the store.

Each folder becomes (or is matched to) a snapshot; its files are ingested (hardlinked into
the store when possible), verified against the catalog, and — with `cleanup_legacy` —
removed (a folder verified whole moves to `migrated/` in one rename, for gc; otherwise its
verified files are unlinked), leaving `archive/<timestamp>` as a compatibility link into
`by_timestamp/`.
Files that could not be ingested stay where they were. Dry run writes nothing.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from sqlalchemy import select

from archive_pipelines.blobstore import sha256_file
from archive_pipelines.catalog import adoption
from archive_pipelines.catalog.files import snapshot_file_rows
from archive_pipelines.catalog.models import Blob, Snapshot
from archive_pipelines.datadir.layout import VIEW_ROOTS
from archive_pipelines.legacy.layout import INDEX, UNKNOWN
from archive_pipelines.legacy.versions import CAS, ORGANIZED, detect_version, is_legacy
from archive_pipelines.storage.context import Storage
from archive_pipelines.storage.ingest import IngestItem, IngestReport, ingest_files, walk_directory
from archive_pipelines.storage.legacy_files import removal_problem, remove_files
from archive_pipelines.storage.legacy_finish import retire_or_remove

MAX_INDEX_BYTES = 32 * 1024 * 1024
# Top-level files (index.json, index.html, ...) of a legacy folder. A top-level *folder*
# named `index` is stored as `unknown/index/...` instead, as `organize` moves it.
INDEX_EXTRACTOR = INDEX


@dataclass
class MigrationReport:
    snapshots: int = 0
    created_snapshots: int = 0
    files: int = 0
    new_blobs: int = 0
    deduplicated: int = 0
    bytes_in: int = 0
    bytes_saved: int = 0
    cleaned_folders: int = 0
    errors: list[str] = field(default_factory=list)

    @property
    def dedup_ratio(self) -> float:
        stored = self.bytes_in - self.bytes_saved
        return self.bytes_in / stored if stored > 0 else 1.0

    def add_ingest(self, ingest: IngestReport) -> None:
        self.files += ingest.files
        self.new_blobs += ingest.new_blobs
        self.deduplicated += ingest.deduplicated
        self.bytes_in += ingest.bytes_in
        self.bytes_saved += ingest.bytes_saved
        self.errors.extend(ingest.errors)


def legacy_folders(archive: Path, resume_from: str = "") -> Iterator[Path]:
    """Real (not symlinked) `archive/<timestamp>/` folders, sorted, from `resume_from` on."""
    names = []
    with os.scandir(archive) as entries:
        for entry in entries:
            if entry.name in VIEW_ROOTS or entry.name.startswith("."):
                continue
            if entry.is_dir(follow_symlinks=False) and entry.name >= resume_from:
                names.append(entry.name)
    for name in sorted(names):
        yield archive / name


def read_legacy_index(folder: Path) -> dict[str, object]:
    """The folder's index.json as a dict ({} when absent, unreadable or not an object)."""
    path = folder / "index.json"
    try:
        if path.is_symlink() or path.stat().st_size > MAX_INDEX_BYTES:
            return {}
        data = json.loads(path.read_bytes())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _created_at(index: dict[str, object], timestamp: str) -> datetime:
    for value in (index.get("timestamp"), timestamp):
        try:
            return datetime.fromtimestamp(float(str(value)), tz=UTC)
        except (TypeError, ValueError, OverflowError, OSError):
            continue
    return datetime.now(UTC)


def folder_version(index: dict[str, object]) -> str:
    """The fs_version of a real folder before it is in the store, from its index.json.

    A label past `organized` (written back into index.json) cannot describe a folder that is
    still real: such a folder is taken as organized.
    """
    version = detect_version(index)
    return version if is_legacy(version) else ORGANIZED


def _snapshot_for(storage: Storage, folder: Path, report: MigrationReport) -> str:
    """The folder's snapshot (see `adoption.folder_claimant`), created when there is none.

    A new snapshot is labelled with the folder's version, not `cas`: the version moves on
    only once the files are verified in the store and the folder is gone (`_cleanup`), so
    an ingest without cleanup leaves it to the lazy migration to finish.
    """
    index = read_legacy_index(folder)
    url = index.get("url") if isinstance(index.get("url"), str) else ""
    timestamp = folder.name
    with storage.session() as session:
        rows = adoption.snapshots_by_timestamp(session, [timestamp])
        found = adoption.folder_claimant(rows, str(url) or None)
        if found is not None and (not url or found.url == url):
            return found.id
        title = index.get("title")
        snapshot = Snapshot(url=str(url or ""), timestamp=timestamp,
                            title=title if isinstance(title, str) else None,
                            created_at=_created_at(index, timestamp),
                            created_by=storage.settings.views.default_user,
                            fs_version=folder_version(index))
        session.add(snapshot)
        session.flush()
        report.created_snapshots += 1
        return snapshot.id


def folder_items(snapshot_id: str, folder: Path, errors: list[str]) -> Iterator[IngestItem]:
    """A snapshot folder's files as ingest items: top-level files as `index`, each top-level
    folder as one extractor, except a folder named `index` (e.g. wget saved a path `index/`):
    its files are `unknown/index/...`, so they never take the names of the top-level files.
    Symlinks and special files are reported, never followed."""
    for entry in sorted(os.scandir(folder), key=lambda e: e.name):
        if entry.is_dir(follow_symlinks=False) and entry.name == INDEX_EXTRACTOR:
            for item in walk_directory(snapshot_id, UNKNOWN, Path(entry.path), errors):
                yield IngestItem(snapshot_id, UNKNOWN, f"{entry.name}/{item.relative_path}",
                                 item.source)
        elif entry.is_dir(follow_symlinks=False):
            yield from walk_directory(snapshot_id, entry.name, Path(entry.path), errors)
        elif entry.is_file(follow_symlinks=False):
            yield IngestItem(snapshot_id, INDEX_EXTRACTOR, entry.name, Path(entry.path))
        else:
            errors.append(f"{entry.path}: skipped (symlink or special file)")


def migrate_to_cas(storage: Storage, *, dry_run: bool = False, cleanup_legacy: bool = False,
                   batch_size: int | None = None, resume_from: str = "",
                   only: set[str] | None = None,
                   progress: Callable[[str], object] | None = None) -> MigrationReport:
    """Migrate every legacy folder (or only those whose timestamp is in `only`)."""
    report = MigrationReport()
    seen_in_run: set[str] = set()
    for folder in legacy_folders(storage.layout.archive, resume_from):
        if only is not None and folder.name not in only:
            continue
        report.snapshots += 1
        if dry_run:
            _dry_run_folder(storage, folder, report, seen_in_run)
        else:
            snapshot_id = _snapshot_for(storage, folder, report)
            errors: list[str] = []
            ingest = ingest_files(storage, folder_items(snapshot_id, folder, errors),
                                  batch_size=batch_size, allow_hardlink=True)
            ingest.errors[:0] = errors
            report.add_ingest(ingest)
            if cleanup_legacy and not ingest.errors and _cleanup(storage, snapshot_id, folder):
                report.cleaned_folders += 1
        if progress:
            progress(folder.name)
    return report


def _dry_run_folder(storage: Storage, folder: Path, report: MigrationReport,
                    seen: set[str]) -> None:
    errors: list[str] = []
    hashed: list[tuple[str, int]] = []
    for item in folder_items("dry-run", folder, errors):
        try:
            hashed.append(sha256_file(item.source))
        except OSError as exc:
            errors.append(f"{item.source}: {exc.strerror or exc}")
    with storage.session() as session:
        known = set(session.scalars(select(Blob.sha256).where(
            Blob.sha256.in_([h for h, _ in hashed])))) if hashed else set()
    for sha, size in hashed:
        report.files += 1
        report.bytes_in += size
        if sha in known or sha in seen:
            report.deduplicated += 1
            report.bytes_saved += size
        else:
            seen.add(sha)
            report.new_blobs += 1
    report.errors.extend(errors)


def _cleanup(storage: Storage, snapshot_id: str, folder: Path) -> bool:
    """Remove legacy files the catalog holds (verified by size + hash), then link the folder."""
    with storage.session() as session:
        recorded = {(ext, rel): sha for _, _, ext, rel, sha
                    in snapshot_file_rows(session, snapshot_id)}
        sizes = {sha: size for sha, size in session.execute(
            select(Blob.sha256, Blob.size).where(Blob.sha256.in_(set(recorded.values()))))}
    errors: list[str] = []
    items = list(folder_items(snapshot_id, folder, errors))
    removable = []
    for item in items:
        sha = recorded.get((item.extractor, item.relative_path))
        record = (sha, int(sizes[sha])) if sha is not None else None
        if removal_problem(storage.primary, item.source, record) is None:
            removable.append(item.source)
    if errors or len(removable) < len(items):
        remove_files(folder, removable)  # what is verified goes; the folder stays with the rest
        return False
    try:  # everything verified: the folder moves aside in one rename, as in the migration
        retire_or_remove(storage.layout.migrated, folder, removable)
    except OSError:
        return False
    with storage.session() as session:
        adoption.update_snapshot(session, snapshot_id, fs_version=CAS)
    return True
