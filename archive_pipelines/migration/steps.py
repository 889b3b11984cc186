"""Run the fs_version chain for snapshots: `organize`, then `to_cas`, in batches.

When both steps run, a flat folder goes straight from its flat paths to its organized names
in the store (see `migration.cas`): the same end state without creating, then removing, the
organized folders on disk. A real `organize` runs first only where two files want one name.

Crash safety comes from ordering. Each step copies, verifies, then removes; the new
fs_version is committed (compare-and-set on the old one) only after the step's files are
verified in their new place and the old copies are gone. So after a kill at any instant:
every original byte is at its flat path, its organized path or in the store; fs_version is
never ahead of the files; re-running resumes (already copied files are skipped).
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

from archive_pipelines.blobstore.local_files import sync_filesystem
from archive_pipelines.catalog import adoption
from archive_pipelines.catalog.adoption import SnapshotRow
from archive_pipelines.legacy.versions import CAS, ORGANIZE, ORGANIZED, TO_CAS
from archive_pipelines.migration.cas import migrate_to_cas_batch
from archive_pipelines.migration.folders import folder_lock, real_folder
from archive_pipelines.migration.labels import NO_FOLDER, needs_migration, steps_for
from archive_pipelines.migration.organize import FolderOrganizer
from archive_pipelines.storage.context import Storage
from archive_pipelines.storage.legacy_cas import read_legacy_index


@dataclass
class StepReport:
    """One snapshot's migration: the steps that ran and where it ended up."""

    snapshot_id: str
    from_version: str
    to_version: str
    steps: list[str] = field(default_factory=list)
    files_moved: int = 0
    files_ingested: int = 0
    skipped: str | None = None  # why nothing was tried (busy folder, shared folder, no folder)
    errors: list[str] = field(default_factory=list)

    @property
    def migrated(self) -> bool:
        return self.to_version != self.from_version and not self.errors


@dataclass
class MigrateReport:
    processed: int = 0
    migrated: int = 0
    failed: int = 0
    skipped: int = 0
    errors: list[str] = field(default_factory=list)
    snapshots: list[StepReport] = field(default_factory=list)


def migrate_snapshot(storage: Storage, snapshot_id: str) -> StepReport:
    """Migrate one snapshot to the CAS layout (a no-op when it is there already)."""
    report = migrate_batch(storage, [snapshot_id])
    if not report.snapshots:
        raise KeyError(f"no snapshot {snapshot_id}")
    return report.snapshots[0]


def organize(storage: Storage, snapshot_id: str) -> StepReport:
    """Only the `organize` step (flat legacy -> per-extractor folders) for one snapshot."""
    return _run(storage, [snapshot_id], (ORGANIZE,)).snapshots[0]


def to_cas(storage: Storage, snapshot_id: str) -> StepReport:
    """Only the `to_cas` step (organized folder -> blobs + views) for one snapshot."""
    return _run(storage, [snapshot_id], (TO_CAS,)).snapshots[0]


def migrate_batch(storage: Storage, snapshot_ids: Sequence[str], *,
                  steps: Sequence[str] = (ORGANIZE, TO_CAS)) -> MigrateReport:
    """Migrate these snapshots as far as they go; one transaction per step for the batch.

    `steps` limits which steps may run (`organize`, `to_cas`); each runs only where the
    snapshot's fs_version calls for it.
    """
    unknown = set(steps) - {ORGANIZE, TO_CAS}
    if unknown:
        raise ValueError(f"unknown migration steps {sorted(unknown)}")
    return _run(storage, snapshot_ids, tuple(steps))


def _run(storage: Storage, snapshot_ids: Sequence[str], wanted: tuple[str, ...]) -> MigrateReport:
    report = MigrateReport()
    with storage.read_session() as session:
        rows = {row.id: row for row in adoption.snapshots_by_id(session, snapshot_ids)}
    steps: dict[str, StepReport] = {}
    for sid in dict.fromkeys(snapshot_ids):
        if sid not in rows:
            report.failed += 1
            report.errors.append(f"{sid}: no such snapshot")
            continue
        steps[sid] = StepReport(sid, rows[sid].fs_version, rows[sid].fs_version)
    with _locked(storage, [rows[sid] for sid in steps], steps) as work:
        flat = [row for row in work if ORGANIZE in steps_for(row.fs_version)]
        if ORGANIZE in wanted and TO_CAS in wanted:
            # Straight from the flat paths into the store; a real organize only where needed.
            _organize(storage, _to_cas(storage, flat, steps, also=ORGANIZE), steps)
        elif ORGANIZE in wanted:
            _organize(storage, flat, steps)
        if TO_CAS in wanted:
            current = [row for row in work if steps[row.id].to_version == ORGANIZED]
            _to_cas(storage, current, steps)
    for step in steps.values():
        report.snapshots.append(step)
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


@contextmanager
def _locked(storage: Storage, rows: list[SnapshotRow],
            steps: dict[str, StepReport]) -> Iterator[list[SnapshotRow]]:
    """The rows to work on, their real folders flock'ed for the duration."""
    archive = storage.layout.archive
    claimants = _folder_claimants(storage, rows)
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
                if not os.access(folder, os.W_OK):  # read-only mount, immutable: nothing can move
                    step.errors.append(f"archive/{row.timestamp} is read-only; left as is")
                    continue
                problem = stack.enter_context(folder_lock(folder))
                if problem == "busy":
                    step.skipped = "folder busy (another run is working on it)"
                    continue
                if problem is not None:
                    step.errors.append(f"archive/{row.timestamp}: {problem}")
                    continue
            work.append(row)
        yield work


def _folder_claimants(storage: Storage, rows: list[SnapshotRow]) -> dict[str, str]:
    """Per timestamp with a real folder: the id of the snapshot whose files it holds."""
    archive = storage.layout.archive
    real = {row.timestamp for row in rows if real_folder(archive / row.timestamp)}
    if not real:
        return {}
    with storage.read_session() as session:
        sharing = adoption.snapshots_by_timestamp(session, real)  # oldest first
    by_stamp: dict[str, list[SnapshotRow]] = defaultdict(list)
    for row in sharing:
        by_stamp[row.timestamp].append(row)
    claimants = {}
    for timestamp, candidates in by_stamp.items():
        if len(candidates) == 1:
            claimants[timestamp] = candidates[0].id  # the common case: no index.json read
            continue
        url = read_legacy_index(archive / timestamp).get("url")
        found = adoption.folder_claimant(candidates, url if isinstance(url, str) else None)
        if found is not None:
            claimants[timestamp] = found.id
    return claimants


def _organize(storage: Storage, rows: list[SnapshotRow], steps: dict[str, StepReport]) -> None:
    archive = storage.layout.archive
    organizers: dict[str, FolderOrganizer] = {}
    done: dict[str, list[str]] = defaultdict(list)
    for row in rows:
        steps[row.id].steps.append(ORGANIZE)
        folder = archive / row.timestamp
        if folder.is_symlink() and os.readlink(folder).startswith("by_timestamp/"):
            # Already in the store under a snapshot sharing this timestamp: nothing to organize.
            done[row.fs_version].append(row.id)
            continue
        if folder.is_symlink() or not folder.is_dir():
            what = "is a symlink" if folder.is_symlink() else "is missing"
            steps[row.id].errors.append(f"organize: archive/{row.timestamp} {what}")
            continue
        organizers[row.id] = FolderOrganizer(folder, row.url)
    pending = list(organizers.values())
    for _round in range(2):  # a second round for folders a moving file was blocking
        for organizer in pending:
            organizer.place()
        if pending:
            sync_filesystem(archive)  # copies durable before any original is removed
        for organizer in pending:
            organizer.remove()
        pending = [o for o in pending if o.blocked]
        for organizer in pending:
            organizer.errors, organizer.blocked = [], False
    if organizers:
        sync_filesystem(archive)  # removals durable before the version moves on
    for row in rows:
        found = organizers.get(row.id)
        if found is None:
            continue
        step = steps[row.id]
        step.files_moved += found.copied
        step.errors.extend(f"organize: {error}" for error in found.errors)
        if found.ok:
            done[row.fs_version].append(row.id)
    _advance(storage, done, ORGANIZED, steps)


def _to_cas(storage: Storage, rows: list[SnapshotRow], steps: dict[str, StepReport],
            also: str | None = None) -> list[SnapshotRow]:
    """Run `to_cas` (with `also` = organize: from flat folders); returns the rows that need a
    real organize first (their errors are not recorded: that organize decides)."""
    if not rows:
        return []
    outcomes = migrate_to_cas_batch(storage, rows)
    done: dict[str, list[str]] = defaultdict(list)
    needs_organize = []
    for row in rows:
        step, outcome = steps[row.id], outcomes[row.id]
        if outcome.needs_organize and also:
            needs_organize.append(row)
            continue
        step.steps.extend([also, TO_CAS] if also else [TO_CAS])
        step.files_ingested += outcome.ingested
        step.errors.extend(f"to_cas: {error}" for error in outcome.errors)
        if outcome.done:
            done[step.to_version].append(row.id)
    _advance(storage, done, CAS, steps)
    return needs_organize


def _advance(storage: Storage, done: dict[str, list[str]], target: str,
             steps: dict[str, StepReport]) -> None:
    """Commit the new fs_version for verified snapshots (only where the old one still holds)."""
    if not done:
        return
    with storage.session() as session:
        for source, ids in done.items():
            adoption.advance_fs_version(session, ids, source, target)
    for ids in done.values():
        for sid in ids:
            steps[sid].to_version = target
