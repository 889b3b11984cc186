"""Filesystem primitives for snapshot folders: listing, locking, atomic writes, invalid/.

Temp files this package writes inside a snapshot folder end with `TEMP_SUFFIX`; a crash can
leave one behind, and the migration steps remove them instead of migrating them.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

from archive_pipelines.datadir.data_dir import VIEW_ROOTS
from archive_pipelines.legacy.fields import looks_like_timestamp

TEMP_SUFFIX = ".~ap-partial"
MAX_TIMESTAMP_CHARS = 32  # snapshot.timestamp is String(32)
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_NOFOLLOW", 0)


def is_partial(name: str) -> bool:
    """True for a temp file this package writes (never a file ArchiveBox wrote)."""
    return name.endswith(TEMP_SUFFIX)


def is_snapshot_name(name: str) -> bool:
    """A folder name that can be a snapshot timestamp (and a by_timestamp/ name)."""
    return len(name) <= MAX_TIMESTAMP_CHARS and looks_like_timestamp(name)


def real_folder(path: Path) -> bool:
    """True for a folder that is not a symlink: `archive/<timestamp>` as a compatibility link
    is the timestamp owner's, never a folder that "turned up" for another snapshot."""
    return path.is_dir() and not path.is_symlink()


def snapshot_folder_names(archive: Path, resume_from: str = "") -> list[str]:
    """Names of real folders in archive/ (no view roots or symlinks), sorted; dot-names
    included (a `..foo` folder is adopted or moved to invalid/ like any other).

    The name list is the only O(n) memory the import holds; `resume_from` keeps names >= it.
    """
    names: list[str] = []
    try:
        with os.scandir(archive) as entries:
            for entry in entries:
                name = entry.name
                if name in VIEW_ROOTS or name < resume_from:
                    continue
                try:
                    if entry.is_dir(follow_symlinks=False):
                        names.append(name)
                except OSError:
                    continue
    except FileNotFoundError:
        return []
    names.sort()
    return names


def other_entries(archive: Path, resume_from: str = "") -> list[tuple[str, str]]:
    """(name, what it is) of entries of archive/ that are neither view roots, real folders,
    nor this project's compatibility links (`<timestamp>` -> `by_timestamp/...`): symlinks
    elsewhere and plain files, which adoption reports and never follows or moves."""
    found: list[tuple[str, str]] = []
    try:
        with os.scandir(archive) as entries:
            for entry in entries:
                if entry.name in VIEW_ROOTS or entry.name < resume_from:
                    continue
                try:
                    if entry.is_symlink():
                        target = os.readlink(entry.path)
                        if not target.startswith("by_timestamp/"):
                            found.append((entry.name, f"a symlink to {target!r}"))
                    elif not entry.is_dir(follow_symlinks=False):
                        found.append((entry.name, "a file"))
                except OSError as exc:
                    found.append((entry.name, f"unreadable ({exc.strerror or exc})"))
    except FileNotFoundError:
        return []
    return sorted(found)


@contextlib.contextmanager
def folder_lock(folder: Path) -> Iterator[str | None]:
    """Hold an exclusive flock on a real folder; yields None, or why it could not be locked.

    Import and migration lock a folder before they read or change it, so two runs (or an
    import racing a migration) never work on one folder at the same time. Reasons: `busy`,
    `gone`, `not a folder (symlink?)`, or the OS error (e.g. permission denied).
    """
    try:
        fd = os.open(folder, _DIR_FLAGS)
    except FileNotFoundError:
        yield "gone"
        return
    except OSError as exc:
        yield "not a folder (symlink?)" if exc.errno in (errno.ELOOP, errno.ENOTDIR) else (
            f"cannot open: {exc.strerror or exc}")
        return
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN):
                raise
            yield "busy"
            return
        yield None
    finally:
        os.close(fd)  # closing releases the lock


def invalid_day(now: datetime | None = None) -> str:
    return (now or datetime.now(UTC)).strftime("%Y%m%d")


def move_to_invalid(folder: Path, invalid_root: Path, day: str | None = None) -> Path:
    """Rename `folder` to `invalid/YYYYMMDD/<name>` (`<name>_1`, `_2`... on collisions).

    A rename, never a copy and delete: across filesystems it fails (EXDEV) and the folder
    stays where it was. Returns the new path.
    """
    target_dir = invalid_root / (day or invalid_day())
    target_dir.mkdir(parents=True, exist_ok=True)
    target = target_dir / folder.name
    counter = 0
    while True:
        # rename() would replace an empty directory: only rename onto a free name.
        if not os.path.lexists(target):
            try:
                os.rename(folder, target)
                return target
            except OSError as exc:
                if exc.errno not in (errno.EEXIST, errno.ENOTEMPTY):
                    raise
        counter += 1
        target = target_dir / f"{folder.name}_{counter}"
