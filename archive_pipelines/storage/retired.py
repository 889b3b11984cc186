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
import shutil
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path


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
class RetiredReport:
    folders: int = 0
    errors: list[str] = field(default_factory=list)


def remove_retired(migrated: Path, *, grace_hours: float, dry_run: bool = False) -> RetiredReport:
    """Delete folders moved to `migrated` more than `grace_hours` ago (by the time of the
    move: the folder's inode change time); empty day folders go too."""
    report = RetiredReport()
    horizon = time.time() - grace_hours * 3600
    try:
        days = sorted(os.scandir(migrated), key=lambda e: e.name)
    except FileNotFoundError:
        return report
    for day in days:
        if not day.is_dir(follow_symlinks=False):
            continue
        with os.scandir(day.path) as entries:
            old = [e for e in entries if e.stat(follow_symlinks=False).st_ctime < horizon]
        for entry in old:
            report.folders += 1
            if dry_run:
                continue
            if entry.is_dir(follow_symlinks=False):
                shutil.rmtree(entry.path, onerror=lambda _fn, path, info: report.errors.append(
                    f"{path}: {getattr(info[1], 'strerror', None) or info[1]}"))
            else:
                os.unlink(entry.path)
        if not dry_run:
            with contextlib.suppress(OSError):  # not empty yet
                os.rmdir(day.path)
    return report
