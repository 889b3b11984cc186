"""Migrated legacy folders: moved out of archive/ in one rename, deleted later by gc.

Once every file of a legacy folder is verified in the store, the folder has nothing left
to keep. Removing it file by file (unlink, then rmdir each folder) cost as much as the
ingest itself, and on ext4 the freed inodes then slow every inode the migration creates
next (the allocator skips recently freed ones; measured in bench/RESULTS.md). So the
migration renames the whole folder to `migrated/<YYYYMMDD>/<timestamp>` (the day it moved,
UTC), and gc deletes what has been there longer than `gc_grace_hours`, off the migration's
path. Nothing is ever deleted at move time: a folder that gained a file the migration did
not verify is renamed straight back.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from archive_pipelines.counts import Counts


class FolderChanged(OSError):
    """The folder held a file the migration had not verified; it was put back."""


def retire_folder(migrated: Path, folder: Path, verified: Iterable[Path | str]) -> Path | None:
    """Move `folder` (every file of it in `verified`) to `migrated` (the data dir's
    `migrated/`); returns where it went.

    None when `migrated/` is on another filesystem than the folder (a rename cannot move
    it): the caller removes the files in place instead. FolderChanged when the moved folder
    holds anything else than `verified` (it is moved back first).
    """
    day = migrated / datetime.now(UTC).strftime("%Y%m%d")
    if day not in _days_made:
        day.mkdir(parents=True, exist_ok=True)
        _days_made.add(day)
    target = _free_name(day, folder.name)
    try:
        os.rename(folder, target)
    except FileNotFoundError:
        if os.path.isdir(folder):  # the day folder went away (gc emptied it): make it again
            _days_made.discard(day)
            return retire_folder(migrated, folder, verified)
        raise
    except OSError as exc:
        if exc.errno == errno.EXDEV:
            return None
        raise
    start = len(str(folder)) + 1
    expected = {str(path)[start:] for path in verified}
    unexpected = sorted(set(_entries(str(target))) - expected)
    if unexpected:
        os.rename(target, folder)
        raise FolderChanged(errno.EEXIST, f"{folder.name} holds files the migration did not "
                            f"verify ({', '.join(unexpected[:3])}); left in place")
    return target


_days_made: set[Path] = set()  # day folders made by this process (`retire_folder`)


def _free_name(parent: Path, name: str) -> Path:
    candidate, n = parent / name, 1
    while os.path.lexists(candidate):
        candidate, n = parent / f"{name}.{n}", n + 1
    return candidate


def _entries(root: str, prefix: str = "") -> Iterator[str]:
    """Relative paths of everything but folders under `root` (never following links)."""
    with os.scandir(root) as listing:
        entries = list(listing)
    for entry in entries:
        if entry.is_dir(follow_symlinks=False):
            yield from _entries(entry.path, f"{prefix}{entry.name}/")
        else:  # files, symlinks (also to folders), anything else
            yield prefix + entry.name


@dataclass
class FolderUsage:
    """What deleting a retired folder takes away: its entries (files, then folders deepest
    first) and the bytes it frees. A file's inode is freed only when every name it has is in
    the folder (a legacy file the migration hard-linked into the store is not: the store
    keeps its bytes); `bytes_held` are the others', and `held` counts their names."""

    files: list[str] = field(default_factory=list)
    folders: list[str] = field(default_factory=list)
    bytes_freed: int = 0
    bytes_held: int = 0
    held: int = 0


def folder_usage(path: str, unlinked: Mapping[tuple[int, int], int] | None = None
                 ) -> FolderUsage:
    """Walk `path` (never following links) and work out what deleting it frees.

    `unlinked` counts, per inode (st_dev, st_ino), names a dry run has already decided to
    remove elsewhere (the store's name of a blob it would collect): the dry run then counts
    as the real run will, where those names are gone by the time the folder is."""
    usage = FolderUsage()
    inodes: dict[tuple[int, int], list[int]] = {}  # inode -> [size, nlink, names inside]
    try:
        top = os.lstat(path)
    except FileNotFoundError:
        return usage
    if not stat.S_ISDIR(top.st_mode):
        usage.files.append(path)
        inodes[(top.st_dev, top.st_ino)] = [top.st_size, top.st_nlink, 1]
    else:
        pending = [path]
        while pending:
            folder = pending.pop()
            usage.folders.append(folder)
            with os.scandir(folder) as listing:
                for entry in listing:
                    if entry.is_dir(follow_symlinks=False):
                        pending.append(entry.path)
                        continue
                    st = entry.stat(follow_symlinks=False)
                    usage.files.append(entry.path)
                    seen = inodes.setdefault((st.st_dev, st.st_ino), [st.st_size, st.st_nlink, 0])
                    seen[2] += 1
        usage.folders.reverse()  # children before their parents
    gone = unlinked or {}
    for key, (size, nlink, inside) in inodes.items():
        if nlink - gone.get(key, 0) <= inside:
            usage.bytes_freed += size
        else:
            usage.bytes_held += size
            usage.held += inside
    return usage


def retired_entries(migrated: Path, grace_hours: float) -> Iterator[tuple[str, list[str]]]:
    """The decision gc's dry run and real run share: per day folder of `migrated` (by
    name), the entries moved there more than `grace_hours` ago (by the time of the move:
    the entry's inode change time; a rename sets it)."""
    horizon = time.time() - grace_hours * 3600
    try:
        days = sorted(os.scandir(migrated), key=lambda e: e.name)
    except FileNotFoundError:
        return
    for day in days:
        if not day.is_dir(follow_symlinks=False):
            continue
        with os.scandir(day.path) as entries:
            old = sorted(e.path for e in entries
                         if e.stat(follow_symlinks=False).st_ctime < horizon)
        yield day.path, old


@dataclass
class RetiredReport(Counts):
    """Retired legacy folders removed (in a dry run: that would be), their bytes, and errors."""

    folders: int = 0  # removed (in a dry run: would be)
    bytes_freed: int = 0
    bytes_held: int = 0  # bytes of files whose inode has a name elsewhere (e.g. the store)
    held: int = 0  # such files
    errors: list[str] = field(default_factory=list)


def remove_retired(migrated: Path, *, grace_hours: float, dry_run: bool = False,
                   unlinked: Mapping[tuple[int, int], int] | None = None,
                   on_folder: Callable[[str, FolderUsage], object] | None = None
                   ) -> RetiredReport:
    """Delete the folders moved to `migrated` more than `grace_hours` ago (`retired_entries`),
    then empty day folders; `dry_run` only counts them, the same way (`folder_usage`).

    `on_folder(path, usage)` hears of each one removed (or that would be). A folder that
    cannot be removed whole (its errors are in the report) is not counted."""
    report = RetiredReport()
    for day, old in retired_entries(migrated, grace_hours):
        for path in old:
            try:
                usage = folder_usage(path, unlinked if dry_run else None)
            except OSError as exc:
                report.errors.append(f"{path}: {exc.strerror or exc}")
                continue
            if not dry_run and not _delete(usage, report.errors):
                continue
            report.folders += 1
            report.bytes_freed += usage.bytes_freed
            report.bytes_held += usage.bytes_held
            report.held += usage.held
            if on_folder is not None:
                on_folder(path, usage)
        if not dry_run:
            with contextlib.suppress(OSError):  # not empty yet
                os.rmdir(day)
    return report


def _delete(usage: FolderUsage, errors: list[str]) -> bool:
    """Unlink the files `folder_usage` listed, then remove the folders, deepest first
    (what shutil.rmtree does, from the listing already made). False after any error."""
    ok = True
    for remove, paths in ((os.unlink, usage.files), (os.rmdir, usage.folders)):
        for path in paths:
            try:
                remove(path)
            except FileNotFoundError:
                continue
            except OSError as exc:
                errors.append(f"{path}: {exc.strerror or exc}")
                ok = False
    return ok
