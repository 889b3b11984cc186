"""Migrate on save: a snapshot is moved to the current layout before it changes.

Only fields that do not place files can change here: `title`, `tags` (the full new set)
and `crawl_id`. url, timestamp, created_at and created_by name view paths; changing them is
a views rebuild, not a save.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from archive_pipelines.archive_error import ArchiveError
from archive_pipelines.catalog import Catalog, utcnow
from archive_pipelines.datadir import DataDir
from archive_pipelines.migration.folders import real_folder
from archive_pipelines.migration.fs_versions import NO_FOLDER, needs_migration
from archive_pipelines.migration.steps import StepReport, migrate_snapshot
from archive_pipelines.storage.file_ingest import DEFAULT_BATCH_SIZE
from archive_pipelines.storage.file_work import FileWork
from archive_pipelines.storage.primary import PrimaryStore
from archive_pipelines.views import ViewSet

SAVABLE_FIELDS = frozenset({"title", "tags", "crawl_id"})


class SnapshotMigrationError(ArchiveError):
    """The snapshot could not be migrated, so the save was not applied."""


@dataclass
class SaveReport:
    snapshot_id: str
    migration: StepReport | None = None
    changed: list[str] = field(default_factory=list)


def save_snapshot(catalog: Catalog, primary: PrimaryStore, views: ViewSet, *, work: FileWork,
                  layout: DataDir, snapshot_id: str,
                  ingest_batch_size: int = DEFAULT_BATCH_SIZE, **changes: Any) -> SaveReport:
    """Migrate the snapshot if its fs_version is behind, then apply `changes` in one transaction.

    Raises ValueError for a field that cannot be saved here, KeyError for an unknown snapshot
    and SnapshotMigrationError (changes not applied) when the migration did not complete.
    """
    unknown = sorted(set(changes) - SAVABLE_FIELDS)
    if unknown:
        raise ValueError(f"cannot save {', '.join(unknown)} here; savable: {sorted(SAVABLE_FIELDS)}")
    with catalog.reading() as tx:
        rows = tx.adoption.snapshots_by_id([snapshot_id])
    if not rows:
        raise KeyError(f"no snapshot {snapshot_id}")
    report = SaveReport(snapshot_id)
    row = rows[0]
    folder_appeared = row.fs_version == NO_FOLDER and real_folder(layout.archive / row.timestamp)
    if needs_migration(row.fs_version) or folder_appeared:
        report.migration = migrate_snapshot(catalog, primary, views, work=work, layout=layout,
                                            snapshot_id=snapshot_id,
                                             ingest_batch_size=ingest_batch_size)
        if report.migration.errors or report.migration.skipped:
            why = "; ".join(report.migration.errors[:3]) or report.migration.skipped
            raise SnapshotMigrationError(f"snapshot {snapshot_id} ({row.fs_version}) could not be "
                                         f"migrated, so it was not saved: {why}")
    if not changes:
        return report
    with catalog.transaction() as tx:
        values: dict[str, Any] = {k: v for k, v in changes.items() if k in ("title", "crawl_id")}
        if "tags" in changes:
            tx.snapshots.replace_tags(snapshot_id, changes["tags"])
        values["updated_at"] = utcnow()
        tx.adoption.update_snapshot(snapshot_id, **values)
    report.changed = sorted(changes)
    return report

