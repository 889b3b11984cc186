"""A whole collection at once: adopt every folder, then migrate every snapshot behind.

What `update`, `migrate-to-cas` and `migrate_to_cas_job` run; the sensors do the same in
small batches. Both halves are the ones the rest of the package uses (`import_orphans`,
`migrate_batch` -> `migration.cas`): there is one way into the store.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from archive_pipelines.blobstore import sha256_file
from archive_pipelines.catalog import Catalog
from archive_pipelines.counts import Counts, MetadataValue, dedup_ratio
from archive_pipelines.datadir import DataDir
from archive_pipelines.legacy.index_json import read_index_url
from archive_pipelines.legacy.snapshot_folder import FolderFile, iter_folder
from archive_pipelines.migration.discovery import ImportReport, import_orphans
from archive_pipelines.migration.folders import snapshot_folder_names
from archive_pipelines.migration.sensor_logic import next_migration_batches
from archive_pipelines.migration.steps import MigrateReport, migrate_batch
from archive_pipelines.sizes import human_bytes
from archive_pipelines.storage.file_ingest import DEFAULT_BATCH_SIZE
from archive_pipelines.storage.file_work import FileWork
from archive_pipelines.storage.primary import PrimaryStore
from archive_pipelines.views import ViewSet

MAX_LISTED = 1000  # per-snapshot failures kept in a report (all are counted)


@dataclass
class Failure:
    """One archive/ entry or snapshot that did not end where it should, and why."""

    where: str  # `archive/<name>` (and the snapshot id when there is one)
    reason: str


def failures(imported: ImportReport | None, migrated: MigrateReport | None) -> list[Failure]:
    """Every archive/ entry the import could not adopt and every snapshot the migration could
    not finish, with why, sorted by where (at most the first errors of each report)."""
    found = [Failure(f"archive/{entry}", reason.removeprefix(f"{entry}: ")) for entry, reason in
             (imported.problems if imported else [])]
    for step in (migrated.snapshots if migrated else []):
        if step.errors:
            found.append(Failure(f"archive/{step.timestamp} ({step.snapshot_id})",
                                 "; ".join(step.errors)))
    return sorted(found, key=lambda f: f.where)


def migrate_all(catalog: Catalog, primary: PrimaryStore, views: ViewSet, *, work: FileWork,
                layout: DataDir, batch_size: int, retire: bool = True,
                ingest_batch_size: int = DEFAULT_BATCH_SIZE,
                progress: Callable[[int], object] | None = None,
                index_warcs: bool = True) -> MigrateReport:
    """Migrate every snapshot whose layout is behind, `batch_size` at a time; one pass over
    the (fs_version, id) index, so a snapshot that fails is tried once per call.
    `index_warcs`: as `migrate_batch`."""
    total, cursor = MigrateReport(), ""
    while True:
        batches, cursor = next_migration_batches(catalog, cursor=cursor, batch_size=batch_size,
                                                 max_batches=1)
        for batch in batches:
            report = migrate_batch(catalog, primary, views, work=work, layout=layout, snapshot_ids=batch,
                                   retire=retire, ingest_batch_size=ingest_batch_size,
                                   index_warcs=index_warcs)
            _add(total, report)
            if progress:
                progress(len(batch))
        if not batches or not cursor:
            return total


def _add(total: MigrateReport, report: MigrateReport) -> None:
    """Add a batch to the total: every count and warning; the errors up to MAX_LISTED, and
    only the snapshots that failed."""
    total.add_counts(report)
    total.warnings.extend(report.warnings)
    room = MAX_LISTED - len(total.errors)
    total.errors.extend(report.errors[:max(room, 0)])
    room = MAX_LISTED - len(total.warc_problem_lines)
    total.warc_problem_lines.extend(report.warc_problem_lines[:max(room, 0)])
    total.snapshots.extend(step for step in report.snapshots if step.errors)


@dataclass
class CollectionReport:
    """A whole collection adopted: the import pass, then the migration of every snapshot."""

    imported: ImportReport
    migrated: MigrateReport

    @property
    def errors(self) -> list[str]:
        return self.imported.errors + self.migrated.errors

    def as_metadata(self) -> dict[str, MetadataValue]:
        return {"dry_run": False, "folders": self.imported.processed,
                "created_snapshots": self.imported.imported, "files": self.migrated.files,
                "new_blobs": self.migrated.new_blobs, "deduplicated": self.migrated.deduplicated,
                "bytes_in": self.migrated.bytes_in, "bytes_saved": self.migrated.bytes_saved,
                "cleaned_folders": self.migrated.migrated,
                "warcs_indexed": self.migrated.warcs_indexed,
                "warc_captures": self.migrated.warc_captures,
                "warc_problems": self.migrated.warc_problems}

    def log_lines(self) -> list[str]:
        """What a run log says: the import pass, then the migration."""
        return self.imported.log_lines() + self.migrated.log_lines()


def adopt_collection(catalog: Catalog, primary: PrimaryStore, views: ViewSet, *,
                     work: FileWork, layout: DataDir, resume_from: str = "", batch_size: int,
                     default_user: str, retire: bool = True,
                     ingest_batch_size: int = DEFAULT_BATCH_SIZE) -> CollectionReport:
    """Import every folder of archive/ (from `resume_from`), then migrate every snapshot
    whose layout is behind (`migrate_all`)."""
    imported = import_orphans(catalog, layout, resume_from=resume_from, batch_size=batch_size,
                              default_user=default_user)
    migrated = migrate_all(catalog, primary, views, work=work, layout=layout, batch_size=batch_size,
                           retire=retire, ingest_batch_size=ingest_batch_size)
    return CollectionReport(imported, migrated)


@dataclass
class DedupEstimate(Counts):
    """What storing the legacy folders would take: `migrate-to-cas --dry-run`."""

    folders: int = 0
    files: int = 0
    new_blobs: int = 0
    deduplicated: int = 0
    bytes_in: int = 0
    bytes_saved: int = 0
    errors: list[str] = field(default_factory=list)

    @property
    def dedup_ratio(self) -> float:
        """Logical bytes / stored bytes (1.0 = no dedup)."""
        return dedup_ratio(self.bytes_in, self.bytes_saved)

    def as_metadata(self) -> dict[str, MetadataValue]:
        return {"dry_run": True, **self.counts(), "dedup_ratio": round(self.dedup_ratio, 4),
                "errors": len(self.errors)}

    def log_lines(self) -> list[str]:
        """What a run log says: what storing the folders would take (nothing written)."""
        return [f"dry run, nothing written: {self.files:,} files of {self.folders:,} legacy "
                f"folder(s) would take {human_bytes(self.bytes_in - self.bytes_saved)} in the "
                f"blob store ({self.new_blobs:,} new blobs; {human_bytes(self.bytes_saved)} of "
                f"{human_bytes(self.bytes_in)} saved by dedup, {self.dedup_ratio:.2f}x)"]


def estimate_dedup(catalog: Catalog, layout: DataDir, *, resume_from: str = "",
                   progress: Callable[[str], object] | None = None) -> DedupEstimate:
    """Hash every file of every legacy folder and count what the store already holds;
    writes nothing (reads the catalog, one query per folder)."""
    report = DedupEstimate()
    seen: set[str] = set()
    archive = layout.archive
    for name in snapshot_folder_names(archive, resume_from):
        folder = archive / name
        report.folders += 1
        hashed: list[tuple[str, int]] = []
        for entry in iter_folder(folder, read_index_url(folder), sizes=False):
            if not isinstance(entry, FolderFile):
                continue
            try:
                hashed.append(sha256_file(folder / entry.rel_path))
            except OSError as exc:
                report.errors.append(f"archive/{name}/{entry.rel_path}: {exc.strerror or exc}")
        with catalog.reading() as tx:
            known = tx.blobs.known_hashes([sha for sha, _size in hashed]) if hashed else set()
        for sha, size in hashed:
            report.files += 1
            report.bytes_in += size
            if sha in known or sha in seen:
                report.deduplicated += 1
                report.bytes_saved += size
            else:
                seen.add(sha)
                report.new_blobs += 1
        if progress:
            progress(name)
    return report
