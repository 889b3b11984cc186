"""Per-day storage figures for the partitioned `snapshots`, `blobs` and `views` assets."""

from __future__ import annotations

from datetime import datetime

from archive_pipelines.catalog import Catalog, DayStats, Saving


def day_stats(catalog: Catalog, start: datetime, end: datetime) -> DayStats:
    """The figures of the snapshots created in [start, end) (one read transaction)."""
    with catalog.reading() as tx:
        return tx.days.day_stats(start, end)


def days_with_snapshots(catalog: Catalog) -> list[str]:
    """The UTC days (YYYY-MM-DD) with snapshots: the `snapshots`/`blobs`/`views` partitions."""
    with catalog.reading() as tx:
        return tx.days.snapshot_days()


def largest_savings(catalog: Catalog, start: datetime, end: datetime, *, limit: int = 10) -> list[Saving]:
    """The blobs of the day's files that dedup saves the most bytes on."""
    with catalog.reading() as tx:
        return tx.days.largest_savings(start, end, limit)


def snapshots_of_day(catalog: Catalog, start: datetime, end: datetime) -> list[str]:
    """Ids of the snapshots created in [start, end)."""
    with catalog.reading() as tx:
        return tx.days.snapshot_ids_created_between(start, end)


__all__ = ["DayStats", "Saving", "day_stats", "days_with_snapshots", "largest_savings",
           "snapshots_of_day"]
