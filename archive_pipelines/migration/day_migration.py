"""One snapshot day brought to the current layout: what the `snapshots` and `blobs` assets run."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from archive_pipelines.catalog import Catalog
from archive_pipelines.counts import MetadataValue
from archive_pipelines.datadir import DataDir
from archive_pipelines.migration.steps import MigrateReport, migrate_batch
from archive_pipelines.sizes import human_bytes
from archive_pipelines.storage.day_stats import DayStats, Saving, day_stats, largest_savings, snapshots_of_day
from archive_pipelines.storage.file_ingest import DEFAULT_BATCH_SIZE
from archive_pipelines.storage.file_work import FileWork
from archive_pipelines.storage.primary import PrimaryStore
from archive_pipelines.storage.snapshot_ingest import Incomplete, find_incomplete
from archive_pipelines.views import ViewSet


@dataclass
class DaySnapshots:
    """The day's snapshots, their migration, and those an ingest left incomplete."""

    snapshots: int
    incomplete: Incomplete
    migrated: MigrateReport = field(default_factory=MigrateReport)

    def as_metadata(self) -> dict[str, MetadataValue]:
        """The day's figures (`day_`, as the catalog holds them after the run) and what this
        run did (`run_`)."""
        return {"day_snapshots": self.snapshots,
                "day_incomplete_snapshots": self.incomplete.count,
                "run_snapshots_processed": self.migrated.processed,
                "run_snapshots_migrated": self.migrated.migrated,
                "run_snapshots_failed": self.migrated.failed}

    def log_lines(self) -> list[str]:
        """What a run log says: the day's snapshots and what their migration did."""
        line = (f"{self.snapshots:,} snapshot(s) of the day; {self.migrated.migrated:,} "
                f"migrated to the blob store now, {self.migrated.failed:,} failed")
        if self.incomplete.count:
            line += f"; {self.incomplete.count:,} incomplete (an ingest running or interrupted)"
        return [line]


def migrate_day(catalog: Catalog, primary: PrimaryStore, views: ViewSet, *,
                work: FileWork, layout: DataDir, start: datetime, end: datetime,
                ingest_batch_size: int = DEFAULT_BATCH_SIZE) -> DaySnapshots:
    """Migrate every snapshot created in [start, end) whose layout is behind; then count
    the day's incomplete snapshots."""
    ids = snapshots_of_day(catalog, start, end)
    migrated = (migrate_batch(catalog, primary, views, work=work, layout=layout, snapshot_ids=ids,
                              ingest_batch_size=ingest_batch_size) if ids else MigrateReport())
    incomplete = find_incomplete(catalog, created_between=(start, end))
    return DaySnapshots(len(ids), incomplete, migrated)


@dataclass
class DayBlobs:
    """The day's files in the blob store (after storing those still in legacy folders), the
    blobs dedup saves the most on within the day, and what the run stored."""

    stats: DayStats
    savings: list[Saving]
    migrated: MigrateReport = field(default_factory=MigrateReport)

    def as_metadata(self) -> dict[str, MetadataValue]:
        """The day's figures (`day_`: the day's snapshot files as the catalog holds them
        after the run, dedup counted among the day's files) and what this run did (`run_`:
        files stored from legacy folders, the blobs that were new to the store)."""
        stats = self.stats
        return {"day_snapshots": stats.snapshots, "day_files": stats.files,
                "day_distinct_blobs": stats.unique_blobs,
                "day_deduplicated_files": stats.files - stats.unique_blobs,
                "day_bytes": stats.logical_bytes, "day_bytes_stored": stats.unique_bytes,
                "day_bytes_saved": stats.bytes_saved,
                "day_dedup_ratio": round(stats.dedup_ratio, 2),
                "run_snapshots_migrated": self.migrated.migrated,
                "run_ingested_files": self.migrated.files,
                "run_new_blobs": self.migrated.new_blobs,
                "run_errors": len(self.migrated.errors)}

    def log_lines(self) -> list[str]:
        """What a run log says: the day's files in the store, and what this run stored."""
        stats = self.stats
        return [f"{stats.files:,} files of the day's {stats.snapshots:,} snapshot(s): "
                f"{human_bytes(stats.logical_bytes)} stored in {human_bytes(stats.unique_bytes)} "
                f"({stats.dedup_ratio:.2f}x); this run stored {self.migrated.files:,} files "
                f"still in legacy folders"]


def store_day_files(catalog: Catalog, primary: PrimaryStore, views: ViewSet, *,
                    work: FileWork, layout: DataDir, start: datetime, end: datetime, savings_limit: int,
                    ingest_batch_size: int = DEFAULT_BATCH_SIZE) -> DayBlobs:
    """Store the files of the day's snapshots still in legacy folders; then the day's figures
    and its `savings_limit` largest dedup savings within the day."""
    stats = day_stats(catalog, start, end)
    migrated = MigrateReport()
    if stats.legacy_ids:
        migrated = migrate_batch(catalog, primary, views, work=work, layout=layout,
                                 snapshot_ids=sorted(stats.legacy_ids),
                                 ingest_batch_size=ingest_batch_size)
        stats = day_stats(catalog, start, end)
    return DayBlobs(stats, largest_savings(catalog, start, end, limit=savings_limit), migrated)
