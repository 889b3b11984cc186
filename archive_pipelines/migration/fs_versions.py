"""fs_version labels as the catalog holds them, including two outside `legacy.versions`.

- `0.x`: a snapshot only ArchiveBox's `index.sqlite3` knows, with no folder (no files).
  Nothing to migrate; if its folder turns up, discovery or `migrate_snapshot` relabels it.
- `legacy`: written by older versions of `storage.legacy_cas.migrate_to_cas` for folders it
  ingested but did not clean up. Read only: the catalog refuses to write it now
  (`catalog.fs_versions`). Treated as the oldest legacy layout.
"""

from __future__ import annotations

from archive_pipelines.catalog import NO_FOLDER
from archive_pipelines.legacy.versions import CAS, FS_VERSIONS, V0_4, migration_chain

__all__ = ["LEGACY_CAS_LABEL", "MIGRATABLE_LABELS", "NO_FOLDER", "effective_version",
           "needs_migration", "steps_for"]

LEGACY_CAS_LABEL = "legacy"

# What the lazy-migration sensor pages through, oldest layout first (0.x has nothing to move).
MIGRATABLE_LABELS: tuple[str, ...] = (*FS_VERSIONS[:-1], LEGACY_CAS_LABEL)


def effective_version(label: str) -> str:
    """The `legacy.versions` label a catalog label migrates from (ValueError if unknown)."""
    if label in FS_VERSIONS:
        return label
    if label in (NO_FOLDER, LEGACY_CAS_LABEL):
        return V0_4
    raise ValueError(f"unknown fs_version {label!r}")


def needs_migration(label: str) -> bool:
    """True unless the snapshot is in the CAS layout (or is a folderless `0.x` record)."""
    return label not in (CAS, NO_FOLDER)


def steps_for(label: str) -> list[str]:
    """The file-moving steps from `label` to CAS: `["to_cas"]`, or none."""
    if label == CAS:
        return []
    return migration_chain(effective_version(label))

