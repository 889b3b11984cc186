"""The fs_version labels: the layout a snapshot's files are in, as the catalog stores it.
Every write of the column is checked here.

Legacy labels name the first ArchiveBox release that wrote each `index.json` shape (every
legacy layout is the same flat folder; `legacy.versions` recognises them and chains them);
`organized` labels folders an earlier version of this project regrouped per extractor;
`cas` is the current layout. `0.x` is a record only ArchiveBox's index.sqlite3 knows,
with no folder. Rows written by older code may also hold `legacy` (see
`migration.fs_versions`); it is still read and migrated, never written again.
"""

from __future__ import annotations

V0_4 = "0.4"  # 0.4.x-0.5.x: `history`, `updated`, no `snapshot_id`
V0_6 = "0.6"  # 0.6.x-0.8.1: adds `snapshot_id`, `tags_str`, `icons`
V0_8 = "0.8"  # 0.8.2: adds `snapshot_abid`
V0_8_3 = "0.8.3"  # 0.8.3+: `downloaded_at` instead of `updated`
V0_9 = "0.9"  # 0.9 development: `archive_results` list and `fs_version`
ORGANIZED = "organized"  # per-extractor folders an earlier version of this project made
CAS = "cas"  # blobs in the content-addressed store, folders are symlink views
NO_FOLDER = "0.x"

LEGACY_VERSIONS: tuple[str, ...] = (V0_4, V0_6, V0_8, V0_8_3, V0_9)
FS_VERSIONS: tuple[str, ...] = (*LEGACY_VERSIONS, ORGANIZED, CAS)  # in migration order
WRITABLE_FS_VERSIONS: frozenset[str] = frozenset({*FS_VERSIONS, NO_FOLDER})


class UnknownFsVersionError(ValueError):
    """An fs_version label that is not in `WRITABLE_FS_VERSIONS`."""


def checked_fs_version(label: str) -> str:
    """`label` itself, or UnknownFsVersionError when the catalog must not store it."""
    if label not in WRITABLE_FS_VERSIONS:
        known = ", ".join(sorted(WRITABLE_FS_VERSIONS))
        raise UnknownFsVersionError(f"fs_version {label!r} is not one of: {known}")
    return label
