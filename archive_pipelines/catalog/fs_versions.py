"""The fs_version labels the catalog accepts; every write of the column is checked here.

A snapshot's label is one of `legacy.versions.FS_VERSIONS`, or `0.x`: a record only
ArchiveBox's index.sqlite3 knows, with no folder. Rows written by older code may also hold
`legacy` (see `migration.labels`); it is still read and migrated, never written again.
"""

from __future__ import annotations

from archive_pipelines.legacy.versions import FS_VERSIONS

NO_FOLDER = "0.x"
WRITABLE_FS_VERSIONS: frozenset[str] = frozenset({*FS_VERSIONS, NO_FOLDER})


class UnknownFsVersionError(ValueError):
    """An fs_version label that is not in `WRITABLE_FS_VERSIONS`."""


def checked_fs_version(label: str) -> str:
    """`label` itself, or UnknownFsVersionError when the catalog must not store it."""
    if label not in WRITABLE_FS_VERSIONS:
        known = ", ".join(sorted(WRITABLE_FS_VERSIONS))
        raise UnknownFsVersionError(f"fs_version {label!r} is not one of: {known}")
    return label
