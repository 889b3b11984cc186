"""Crash-safe file operations for the local store: temp files, fsync, link-into-place."""

from __future__ import annotations

import ctypes
import errno
import itertools
import os
import re
import secrets
import time
from pathlib import Path

# link() refused by the filesystem itself (not by a name clash): fall back to copy / rename.
LINK_UNSUPPORTED = frozenset({errno.EXDEV, errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP,
                              errno.EMLINK, errno.EACCES})

_REASONS = {
    errno.ENOSPC: "no space left on device",
    errno.EDQUOT: "disk quota exceeded",
    errno.EROFS: "read-only file system",
    errno.EACCES: "permission denied",
    errno.EPERM: "operation not permitted",
}


def describe_os_error(exc: OSError) -> str:
    """`<reason> (<path>)` for a store error message."""
    reason = _REASONS.get(exc.errno or 0) or exc.strerror or str(exc)
    return f"{reason} ({exc.filename})" if exc.filename else reason


def fsync_dir(directory: Path) -> None:
    """Make entries created or removed in `directory` durable."""
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def fsync_file(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def ensure_dir(directory: Path, *, sync: bool = True) -> None:
    """Create `directory` and missing parents, fsyncing each parent that gained an entry."""
    if directory.is_dir():
        return
    missing: list[Path] = []
    current = directory
    while not current.is_dir():
        missing.append(current)
        current = current.parent
    for path in reversed(missing):
        try:
            path.mkdir()
        except FileExistsError:
            if not path.is_dir():
                raise
            continue  # a concurrent writer made it
        if sync:
            fsync_dir(path.parent)


_TEMP_NAME = re.compile(r"\.[0-9a-z]{1,16}\.[0-9a-f]{16}\.tmp")


def is_temp_name(name: str) -> bool:
    """Whether a file name is one `temp_name` makes: a writer's file not yet published (one a
    killed writer left is removed by `remove_stale_temps` once old)."""
    return _TEMP_NAME.fullmatch(name) is not None


def temp_name(directory: str, hint: str) -> str:
    """A fresh hidden name in `directory`, never a valid blob key (listings skip it): a
    random per-process prefix and a counter (no getrandom call per file). Names may repeat
    across processes only by chance (2^-32); whoever creates the second one gets
    FileExistsError, as with any O_EXCL or link() name."""
    return f"{directory}/.{hint[:16]}.{_temp_prefix}{next(_temp_counter) & 0xFFFFFFFF:08x}.tmp"


def _new_temp_prefix() -> None:
    global _temp_prefix
    _temp_prefix = secrets.token_hex(4)


_temp_prefix = ""
_new_temp_prefix()
os.register_at_fork(after_in_child=_new_temp_prefix)  # a forked child must not repeat ours
_temp_counter = itertools.count()


def remove_stale_temps(directories: list[Path], max_age_seconds: float) -> int:
    """Delete temp files a killed writer left in `directories`, if older than the age.

    Age is the inode change time, which linking also updates: an in-flight hardlink temp
    of an old source file is never mistaken for litter.
    """
    horizon = time.time() - max_age_seconds
    removed = 0
    for directory in directories:
        try:
            with os.scandir(directory) as entries:
                stale = [e.path for e in entries if _TEMP_NAME.fullmatch(e.name)
                         and e.is_file(follow_symlinks=False)
                         and e.stat(follow_symlinks=False).st_ctime < horizon]
        except FileNotFoundError:
            continue
        for path in stale:
            try:
                os.unlink(path)
                removed += 1
            except FileNotFoundError:
                continue
    return removed


def publish(temp: Path | str, final: Path | str, *, sync: bool = True) -> bool:
    """Give `temp` (complete and fsynced) the name `final` atomically, never overwriting.

    Returns True when `temp` became `final` (the name `temp` is then gone), False if `final`
    already exists (a concurrent writer won): the existing object is left untouched and the
    caller removes `temp`. One renameat2(RENAME_NOREPLACE) where the kernel and filesystem
    have it; else link + unlink, or a plain rename on filesystems without hard links.
    """
    renamed = _rename_noreplace(temp, final)
    if renamed is False:
        return False
    if renamed is None:
        try:
            os.link(temp, final)  # fails instead of overwriting
        except FileExistsError:
            return False
        except OSError as exc:
            if exc.errno not in LINK_UNSUPPORTED:
                raise
            # No hard links on this filesystem: rename. Racing writers hold identical bytes.
            if os.path.lexists(final):
                return False
            os.replace(temp, final)
        else:
            os.unlink(temp)
    if sync:
        fsync_dir(Path(final).parent)  # the journal commits the rename as one transaction
    return True


def _rename_noreplace(temp: Path | str, final: Path | str) -> bool | None:
    """renameat2(temp, final, RENAME_NOREPLACE): True if renamed, False if `final` exists,
    None if this kernel or filesystem cannot do it (the caller falls back)."""
    if _renameat2 is None:
        return None
    if _renameat2(_AT_FDCWD, os.fsencode(temp), _AT_FDCWD, os.fsencode(final),
                  _RENAME_NOREPLACE) == 0:
        return True
    err = ctypes.get_errno()
    if err == errno.EEXIST:
        return False
    if err in (errno.ENOSYS, errno.EINVAL, errno.ENOTSUP, errno.EOPNOTSUPP):
        return None
    raise OSError(err, os.strerror(err), str(final))


def sync_filesystem(path: Path) -> None:
    """Flush every dirty page and entry of the filesystem holding `path` (Linux syncfs).

    One call replaces an fsync per file and per directory for a batch of writes.
    """
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        if _syncfs is None or _syncfs(fd) != 0:
            os.sync()
    finally:
        os.close(fd)


def _libc_function(name: str):  # type: ignore[no-untyped-def]
    """A libc function through ctypes (which releases the GIL during the call), or None."""
    try:
        return getattr(ctypes.CDLL(None, use_errno=True), name)
    except (OSError, AttributeError):
        return None


_syncfs = _libc_function("syncfs")
_renameat2 = _libc_function("renameat2")
_AT_FDCWD = -100
_RENAME_NOREPLACE = 1
