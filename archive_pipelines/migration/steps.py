"""Migrate snapshots into the blob store (`to_cas`, `migration.cas`), in batches.

Every legacy layout (flat ArchiveBox folders of any release, and folders an earlier version
of this project organized per extractor) is one step from the CAS layout: its files are
stored at the paths they have, so nothing on disk moves before it is verified in the store.

Crash safety comes from ordering: copy (hard link) into the store, verify, then retire the
folder in one rename (on an S3 primary the folder is never retired: `migration.cas`); the
new fs_version is committed (compare-and-set on the old one) only after that. So after a
kill at any instant every original byte is at its path in the folder or in the store and
referenced; fs_version is never ahead of the files; re-running resumes
(already stored files are skipped).
A snapshot's own WARCs (`warc/*.warc.gz`) are indexed into captures after its files are
verified in the store and before its fs_version is committed (so a kill between leaves it to
be migrated, and indexed, again: the importer's ledger skips what was done); a WARC that
cannot be read is reported (`warc_problems`), never a failure of the snapshot.
Folders are flock'ed while a step works on them; a busy folder is skipped, not waited for.
A real folder `archive/<timestamp>` is migrated only by the snapshot whose files it holds
(`adoption.folder_claimant`); another snapshot sharing the timestamp is skipped until the
folder is a compatibility link, so it never takes the folder's files or replaces its link.
"""

from __future__ import annotations

import os
from collections import defaultdict
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field

from archive_pipelines.catalog import Catalog, SnapshotRow, folder_claimant
from archive_pipelines.counts import Counts, MetadataValue
from archive_pipelines.datadir import DataDir
from archive_pipelines.legacy.index_json import read_index_url
from archive_pipelines.legacy.versions import CAS, TO_CAS
from archive_pipelines.migration.adopted_warcs import index_adopted_warcs
from archive_pipelines.migration.cas import migrate_to_cas_batch
from archive_pipelines.migration.folders import folder_lock, real_folder
from archive_pipelines.migration.fs_versions import NO_FOLDER, needs_migration, steps_for
from archive_pipelines.sizes import human_bytes
from archive_pipelines.storage.file_ingest import DEFAULT_BATCH_SIZE, IngestReport
from archive_pipelines.storage.file_work import FileWork
from archive_pipelines.storage.primary import PrimaryStore
from archive_pipelines.views import ViewSet


@dataclass
class StepReport(Counts):
    """One snapshot's migration: the steps that ran and where it ended up."""

    snapshot_id: str
    from_version: str
    to_version: str
    timestamp: str = ""
    steps: list[str] = field(default_factory=list)
    files_ingested: int = 0
    links: int = 0  # symlinks found in the folder and recorded
    skipped: str | None = None  # why nothing was tried (busy folder, shared folder, no folder)
    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)  # reported; the snapshot migrated anyway

    @property
    def migrated(self) -> bool:
        return self.to_version != self.from_version and not self.errors


@dataclass
class MigrateReport(Counts):
    """Snapshots migrated, failed or skipped, the files they stored, and what went wrong."""

    processed: int = 0
    migrated: int = 0
    failed: int = 0
    skipped: int = 0
    files: int = 0  # files stored (or found stored) from legacy folders
    new_blobs: int = 0
    deduplicated: int = 0
    bytes_in: int = 0
    bytes_saved: int = 0
    warcs_indexed: int = 0  # the snapshots' own WARC files whose records became captures
    warc_captures: int = 0
    warc_problems: int = 0  # of those, the files with unreadable records (`warc_problem_lines`)
    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    warc_problem_lines: list[str] = field(default_factory=list)
    snapshots: list[StepReport] = field(default_factory=list)

    def as_metadata(self) -> dict[str, MetadataValue]:
        return {**self.counts(), "errors": len(self.errors)}

    def log_lines(self) -> list[str]:
        """What a run log says: snapshots looked at, the files and bytes they stored, and how
        many reached the current layout (their legacy folder retired)."""
        line = (f"{self.processed:,} snapshot(s) looked at: {self.files:,} files in the blob "
                f"store ({self.new_blobs:,} new blobs, {human_bytes(self.bytes_saved)} of "
                f"{human_bytes(self.bytes_in)} saved by dedup), {self.migrated:,} brought to "
                "the current layout")
        if self.failed or self.skipped:
            line += f"; {self.failed:,} failed, {self.skipped:,} skipped"
        lines = [line]
        if self.warcs_indexed or self.warc_problems:
            lines.append(f"{self.warcs_indexed:,} of the snapshots' own WARC file(s) indexed: "
                         f"{self.warc_captures:,} captures; {self.warc_problems:,} with "
                         "unreadable records")
        return lines


def migrate_snapshot(catalog: Catalog, primary: PrimaryStore, views: ViewSet, *, work: FileWork,
                     layout: DataDir, snapshot_id: str,
                     ingest_batch_size: int = DEFAULT_BATCH_SIZE) -> StepReport:
    """Migrate one snapshot to the CAS layout (a no-op when it is there already)."""
    report = migrate_batch(catalog, primary, views, work=work, layout=layout, snapshot_ids=[snapshot_id],
                           ingest_batch_size=ingest_batch_size)
    if not report.snapshots:
        raise KeyError(f"no snapshot {snapshot_id}")
    return report.snapshots[0]


def to_cas(catalog: Catalog, primary: PrimaryStore, views: ViewSet, *, work: FileWork,
           layout: DataDir, snapshot_id: str,
           ingest_batch_size: int = DEFAULT_BATCH_SIZE) -> StepReport:
    """The `to_cas` step (legacy folder -> blobs + views) for one snapshot."""
    return _run(catalog, primary, views, work=work, layout=layout, snapshot_ids=[snapshot_id],
                ingest_batch_size=ingest_batch_size).snapshots[0]


def migrate_batch(catalog: Catalog, primary: PrimaryStore, views: ViewSet, *, work: FileWork,
                  layout: DataDir, snapshot_ids: Sequence[str], retire: bool = True,
                  ingest_batch_size: int = DEFAULT_BATCH_SIZE,
                  index_warcs: bool = True) -> MigrateReport:
    """Migrate these snapshots into the store; one ingest and one fs_version commit for the
    batch. `retire=False` stores and records their files but leaves the folders (and their
    fs_version) as they are, for a later migration to finish. `ingest_batch_size`: files per
    catalog transaction of the ingest (the `storage.ingest_batch_size` setting).
    `index_warcs=False` leaves the snapshots' own WARCs unindexed (`index-warcs` does it)."""
    return _run(catalog, primary, views, work=work, layout=layout, snapshot_ids=snapshot_ids, retire=retire,
                ingest_batch_size=ingest_batch_size, index_warcs=index_warcs)


def _run(catalog: Catalog, primary: PrimaryStore, views: ViewSet, *, work: FileWork,
         layout: DataDir, snapshot_ids: Sequence[str], retire: bool = True,
         ingest_batch_size: int, index_warcs: bool = True) -> MigrateReport:
    report = MigrateReport()
    with catalog.reading() as tx:
        rows = {row.id: row for row in tx.adoption.snapshots_by_id(snapshot_ids)}
    steps: dict[str, StepReport] = {}
    for sid in dict.fromkeys(snapshot_ids):
        if sid not in rows:
            report.failed += 1
            report.errors.append(f"{sid}: no such snapshot")
            continue
        steps[sid] = StepReport(sid, rows[sid].fs_version, rows[sid].fs_version,
                                timestamp=rows[sid].timestamp)
    with _locked(catalog, layout, [rows[sid] for sid in steps], steps=steps,
                 moves_folders=primary.is_local) as locked:
        ingest = _to_cas(catalog, primary, views, work=work, layout=layout, rows=locked, steps=steps,
                         retire=retire, ingest_batch_size=ingest_batch_size,
                         report=report if index_warcs else None)
    if ingest is not None:
        report.files, report.new_blobs, report.deduplicated = (
            ingest.files, ingest.new_blobs, ingest.deduplicated)
        report.bytes_in, report.bytes_saved = ingest.bytes_in, ingest.bytes_saved
    for step in steps.values():
        report.snapshots.append(step)
        report.warnings.extend(step.warnings)
        report.processed += 1
        if step.errors:
            report.failed += 1
            where = f"archive/{rows[step.snapshot_id].timestamp} ({step.snapshot_id})"
            report.errors.extend(f"{where}: {error}" for error in step.errors)
        elif step.skipped:
            report.skipped += 1
        elif step.migrated:
            report.migrated += 1
    return report


# What folder_lock says of a folder another run retired between our look and our lock.
_MOVED = ("gone", "not a folder (symlink?)")


@contextmanager
def _locked(catalog: Catalog, layout: DataDir, rows: list[SnapshotRow],
            *, steps: dict[str, StepReport], moves_folders: bool = True
            ) -> Iterator[list[SnapshotRow]]:
    """The rows to work on, their real folders flock'ed for the duration. A read-only folder
    is refused only where the migration retires folders (`moves_folders`: a local primary)."""
    archive = layout.archive
    claimants = _folder_claimants(catalog, layout, rows)
    with ExitStack() as stack:
        work: list[SnapshotRow] = []
        owners: dict[str, str] = {}
        for row in sorted(rows, key=lambda r: (r.created_at, r.id)):
            step = steps[row.id]
            if not needs_migration(row.fs_version):
                if row.fs_version == NO_FOLDER and real_folder(archive / row.timestamp):
                    pass  # its folder turned up: migrate it like a flat legacy folder
                else:
                    step.skipped = "no folder" if row.fs_version == NO_FOLDER else None
                    continue
            try:
                steps_for(row.fs_version)
            except ValueError as exc:
                step.errors.append(str(exc))
                continue
            if row.timestamp in owners:
                step.skipped = f"shares archive/{row.timestamp} with {owners[row.timestamp]}"
                continue
            folder = archive / row.timestamp
            claimant = claimants.get(row.timestamp)
            if claimant is not None and claimant != row.id:
                step.skipped = f"archive/{row.timestamp} holds the files of {claimant}"
                continue
            owners[row.timestamp] = row.id
            if folder.is_dir() and not folder.is_symlink():
                # Locked before anything else is read of it: another run that held the lock may
                # have just moved it to migrated/ (the path missing, then a symlink).
                problem = stack.enter_context(folder_lock(folder))
                if problem == "busy":
                    step.skipped = "folder busy (another run is working on it)"
                    continue
                if problem in _MOVED or not real_folder(folder):
                    step.skipped = "folder moved by another run meanwhile"
                    continue
                if problem is not None:
                    step.errors.append(f"archive/{row.timestamp}: {problem}")
                    continue
                if moves_folders and not os.access(folder, os.W_OK):
                    # read-only mount, immutable: nothing can move
                    step.errors.append(f"archive/{row.timestamp} is read-only; left as is")
                    continue
            work.append(row)
        yield work


def _folder_claimants(catalog: Catalog, layout: DataDir, rows: list[SnapshotRow]) -> dict[str, str]:
    """Per timestamp with a real folder: the id of the snapshot whose files it holds."""
    archive = layout.archive
    real = {row.timestamp for row in rows if real_folder(archive / row.timestamp)}
    if not real:
        return {}
    with catalog.reading() as tx:
        sharing = tx.adoption.snapshots_by_timestamp(real)  # oldest first
    by_stamp: dict[str, list[SnapshotRow]] = defaultdict(list)
    for row in sharing:
        by_stamp[row.timestamp].append(row)
    claimants = {}
    for timestamp, candidates in by_stamp.items():
        if len(candidates) == 1:
            claimants[timestamp] = candidates[0].id  # the common case: no index.json read
            continue
        found = folder_claimant(candidates, read_index_url(archive / timestamp))
        if found is not None:
            claimants[timestamp] = found.id
    return claimants


def _to_cas(catalog: Catalog, primary: PrimaryStore, views: ViewSet, *, work: FileWork,
            layout: DataDir, rows: list[SnapshotRow], steps: dict[str, StepReport],
            retire: bool, ingest_batch_size: int, report: MigrateReport | None) -> IngestReport | None:
    """`to_cas` for the locked rows; then (with a `report` to count them in) the WARCs of those
    it finished are indexed, before their fs_version is committed."""
    if not rows:
        return None
    outcomes, ingest = migrate_to_cas_batch(catalog, primary, views, work=work, layout=layout, rows=rows,
                                            retire=retire, ingest_batch_size=ingest_batch_size)
    done: dict[str, list[str]] = defaultdict(list)
    for row in rows:
        step, outcome = steps[row.id], outcomes[row.id]
        step.steps.append(TO_CAS)
        step.files_ingested += outcome.ingested
        step.links += outcome.links
        step.errors.extend(f"to_cas: {error}" for error in outcome.errors)
        step.warnings.extend(outcome.warnings)
        if outcome.done:
            done[step.to_version].append(row.id)
    if report is not None and done:
        warcs = index_adopted_warcs(catalog, primary, views, layout=layout,
                                    snapshot_ids=[sid for ids in done.values() for sid in ids])
        report.warcs_indexed, report.warc_captures = warcs.indexed, warcs.captures
        report.warc_problems, report.warc_problem_lines = warcs.with_problems, warcs.problems
    _advance(catalog, done, CAS, steps=steps)
    return ingest


def _advance(catalog: Catalog, done: dict[str, list[str]], target: str,
             *, steps: dict[str, StepReport]) -> None:
    """Commit the new fs_version for verified snapshots (only where the old one still holds)."""
    if not done:
        return
    with catalog.transaction() as tx:
        for source, ids in done.items():
            tx.adoption.advance_fs_version(ids, source, target)
    for ids in done.values():
        for sid in ids:
            steps[sid].to_version = target
