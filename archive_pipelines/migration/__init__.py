"""Lazy adoption of legacy ArchiveBox collections, in plain Python.

Discovery (`import_orphans`), the one step into the store (`to_cas`, `migrate_batch`),
migrate-on-save, exact-duplicate merging and the sensors' pure decisions. The Dagster
wiring calls these; nothing here imports dagster.
"""

from archive_pipelines.migration.discovery import ImportReport, import_orphans
from archive_pipelines.migration.duplicate_merge import MergeReport, merge_duplicates
from archive_pipelines.migration.save import SaveReport, SnapshotMigrationError, save_snapshot
from archive_pipelines.migration.sensor_logic import next_migration_batches, orphan_folders_changed
from archive_pipelines.migration.steps import (
    MigrateReport,
    StepReport,
    migrate_batch,
    migrate_snapshot,
    to_cas,
)

__all__ = [
    "ImportReport",
    "MergeReport",
    "MigrateReport",
    "SaveReport",
    "SnapshotMigrationError",
    "StepReport",
    "import_orphans",
    "merge_duplicates",
    "migrate_batch",
    "migrate_snapshot",
    "next_migration_batches",
    "orphan_folders_changed",
    "save_snapshot",
    "to_cas",
]
