"""The last part of `to_cas` for one snapshot: verify its files, then retire its folder.

Plain file work over what the parent read from the catalog (no catalog access here), so the
migration runs it in the ingest's worker processes, one snapshot per call
(`FileWorkers.map`); `migration.cas` is the whole step.

On a primary that is not a local folder (S3) the folder is never retired: `verify_kept`
checks the same things against blobs read back from the bucket, and the folder stays as it
was (it is the user's disk; there are no views to link `archive/<timestamp>` into).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from archive_pipelines.blobstore import CheckResult, LocalBlobStore, sha256_file
from archive_pipelines.legacy.snapshot_folder import display_path
from archive_pipelines.storage.legacy_files import link_compat_folder, removal_problem, remove_files
from archive_pipelines.storage.retired import retire_folder
from archive_pipelines.views import ViewFarm

MAX_PROBLEMS_SHOWN = 3


@dataclass(frozen=True)
class FinishTask:
    """One snapshot's folder, what was ingested from it, and what the catalog records."""

    timestamp: str
    migrated: Path  # the data dir's migrated/ (`storage.retired`)
    # (relative_path, source file) ingested from its folder; None: it had no folder of its
    # own (already retired, or never had one).
    files: tuple[tuple[str, Path | str], ...] | None
    records: tuple[tuple[str, str, int], ...]  # (relative_path, sha256, size) in the catalog
    ingest_errors: tuple[str, ...]  # the ingest's errors for files of this folder
    links: tuple[str, ...] = ()  # relative paths of the folder's symlinks (recorded already)
    retire: bool = True  # False: the folder has problems already; only check and report


def verify_and_finish(store: LocalBlobStore, farm: ViewFarm, task: FinishTask) -> list[str]:
    """Check the snapshot against the catalog and the store; only if all holds, move its
    folder to `migrated/` and link `archive/<timestamp>`. Returns the problems ([] = done)."""
    folder = farm.archive_root / task.timestamp
    blob_stats: dict[str, os.stat_result] = {}
    problems = _catalog_problems(store, task.records, blob_stats)
    if task.files is not None:
        problems += [_short(error, folder) for error in task.ingest_errors]
        problems += _unverified(store, task.files, task.records, blob_stats=blob_stats)
    elif os.path.islink(folder):
        if not os.readlink(folder).startswith("by_timestamp/"):
            problems.append(f"archive/{task.timestamp} is a symlink to {os.readlink(folder)!r}, "
                            "not a compatibility link; left alone")
    elif not task.records:
        problems.append("folder missing and no files recorded; nothing to link")
    if problems or not task.retire:
        return _capped(problems)
    try:
        retire_or_remove(task.migrated, folder, [f[1] for f in task.files or ()],
                         links=[f"{folder}/{rel}" for rel in task.links])
    except OSError as exc:
        return [f"cleanup: {exc.strerror or exc}"]
    return []


def verify_kept(archive_root: Path, task: FinishTask, *,
                blobs: Mapping[str, CheckResult]) -> list[str]:
    """Check the snapshot against the catalog and a store that is not a local folder, whose
    blobs the caller read back and rehashed (`blobs`: every sha256 of `task.records`, as
    `BlobStore.check` found it). Never changes the folder. Returns the problems ([] = done).

    Every file row's blob must be good, with the catalog's size; every file of the folder
    must be recorded, and hash (now) to the recorded sha256."""
    folder = archive_root / task.timestamp
    problems = []
    for rel, sha, _size in task.records:
        found = blobs[sha]
        if not found.ok:
            problems.append(f"{display_path(rel)}: blob {sha[:12]} {found.status} in the store"
                            + (f" ({found.detail})" if found.detail else ""))
    if task.files is not None:
        problems += [_short(error, folder) for error in task.ingest_errors]
        recorded = {rel: (sha, size) for rel, sha, size in task.records}
        for rel, source in task.files:
            problem = _kept_file_problem(source, recorded.get(rel))
            if problem is not None:
                problems.append(f"{display_path(rel)}: {problem}")
    elif os.path.islink(folder):
        if not os.readlink(folder).startswith("by_timestamp/"):
            problems.append(f"archive/{task.timestamp} is a symlink to {os.readlink(folder)!r}; "
                            "left alone")
    elif not task.records:
        problems.append("folder missing and no files recorded")
    return _capped(problems)


def _capped(problems: list[str]) -> list[str]:
    """The first MAX_PROBLEMS_SHOWN problems, and how many more there were."""
    more = len(problems) - MAX_PROBLEMS_SHOWN
    return problems[:MAX_PROBLEMS_SHOWN] + ([f"... and {more} more"] if more > 0 else [])


def _kept_file_problem(source: Path | str, recorded: tuple[str, int] | None) -> str | None:
    if recorded is None:
        return "not recorded in the catalog"
    sha, size = recorded
    try:
        found = os.lstat(source).st_size
        if found != size:
            return f"has {found} bytes, the catalog says {size}"
        if sha256_file(source)[0] != sha:
            return "content differs from the catalog's (changed since it was stored?)"
    except FileNotFoundError:
        return "file missing"
    except OSError as exc:
        return f"cannot read: {exc.strerror or exc}"
    return None


def _catalog_problems(store: LocalBlobStore, records: tuple[tuple[str, str, int], ...],
                      blob_stats: dict[str, os.stat_result]) -> list[str]:
    """Every file row must have its blob, with the catalog's size (stats kept in
    `blob_stats`: a snapshot's files are checked against the same blobs next)."""
    problems = []
    for rel, sha, size in records:
        try:
            found = blob_stats.get(sha) or os.stat(store.object_path(sha))
        except FileNotFoundError:
            problems.append(f"{display_path(rel)}: blob {sha[:12]} missing")
            continue
        blob_stats[sha] = found
        if found.st_size != size:
            problems.append(f"{display_path(rel)}: blob size {found.st_size} != {size}")
    return problems


def _unverified(store: LocalBlobStore, files: tuple[tuple[str, Path | str], ...],
                records: tuple[tuple[str, str, int], ...],
                *, blob_stats: dict[str, os.stat_result]) -> list[str]:
    recorded = {rel: (sha, size) for rel, sha, size in records}
    problems = []
    hashed: set[str] = set()  # blobs read and found good: shared ones are read once
    for rel, source in files:
        record = recorded.get(rel)
        problem = removal_problem(store, source, record,
                                  blob_stat=blob_stats.get(record[0]) if record else None,
                                  hashed_blobs=hashed)
        if problem is not None:
            problems.append(f"{display_path(rel)}: {problem}")
    return problems


def _short(message: str, folder: Path) -> str:
    return display_path(message.replace(f"{folder}/", "", 1))


def retire_or_remove(migrated: Path, folder: Path, sources: Sequence[Path | str],
                     *, links: Sequence[Path | str] = ()) -> None:
    """Move a folder whose every file is in `sources` (verified in the store) and every
    symlink in `links` (recorded) aside (`storage.retired`; gc deletes it later) or, across
    filesystems, remove those in place; then link `archive/<timestamp>`. OSError when the
    folder has to stay."""
    real_folder = os.path.isdir(folder) and not os.path.islink(folder)
    if real_folder and retire_folder(migrated, folder, [*sources, *links]) is None and \
            not remove_files(folder, [*sources, *links]):
        raise OSError(f"{folder.name} still holds files that were not migrated")
    if not os.path.lexists(folder):
        link_compat_folder(folder)
