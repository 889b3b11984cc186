"""The project's error type: one clear line for a person, never a traceback wall."""

import errno
import sqlite3


class ArchiveError(Exception):
    """An error whose message is meant to be shown to a user as is.

    Messages name the setting, path or record involved and say what is wrong. The command
    line exits with `exit_status`.
    """

    exit_status = 2


class NotFound(ArchiveError):
    """Nothing matches what was asked for (a snapshot, a session, a hash): exit status 1,
    as for a lookup that finds nothing."""

    exit_status = 1


class SettingsError(ArchiveError):
    """The settings file or an environment variable is malformed or invalid."""


class CatalogError(ArchiveError):
    """The catalog database is unreachable or a write violated a constraint."""


class DataDirError(ArchiveError):
    """The data directory is missing, not writable, or a path would leave it."""


class DiskFull(ArchiveError):
    """A write failed because its disk (or the user's quota) is full; nothing was recorded
    for it, and running the command again once there is space continues."""


# A disk that takes no more bytes: full, or the user's quota used up.
DISK_FULL_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT})


def is_disk_full(exc: BaseException) -> bool:
    """Whether `exc` (or an exception it was raised from) says a disk is full: ENOSPC or
    EDQUOT, SQLite's SQLITE_FULL, or a `DiskFull`."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, DiskFull):
            return True
        if isinstance(current, OSError) and current.errno in DISK_FULL_ERRNOS:
            return True
        if isinstance(current, sqlite3.Error) and \
                getattr(current, "sqlite_errorcode", None) == sqlite3.SQLITE_FULL:
            return True
        current = current.__cause__ or current.__context__
    return False


def disk_full_message(exc: BaseException) -> str:
    """One line for a disk-full error: `data disk full: <what failed>`."""
    if isinstance(exc, DiskFull):
        return str(exc)
    if isinstance(exc, OSError) and not isinstance(exc, ArchiveError):
        reason = "disk quota exceeded" if exc.errno == errno.EDQUOT else "no space left on device"
        return f"data disk full: {reason} ({exc.filename})" if exc.filename \
            else f"data disk full: {reason}"
    return f"data disk full: {exc}"
