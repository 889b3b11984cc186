"""Per-day storage figures for the partitioned `snapshots`, `blobs` and `views` assets."""

from __future__ import annotations

from datetime import datetime

from archive_pipelines.catalog import days, reports
from archive_pipelines.catalog.days import DayStats
from archive_pipelines.catalog.reports import Saving
from archive_pipelines.catalog.sessions import Catalog


def day_stats(catalog: Catalog, start: datetime, end: datetime) -> DayStats:
    """The figures of the snapshots created in [start, end) (one read transaction)."""
    with catalog.read_session() as session:
        return days.day_stats(session, start, end)


def days_with_snapshots(catalog: Catalog) -> list[str]:
    """The UTC days (YYYY-MM-DD) with snapshots: the `snapshots`/`blobs`/`views` partitions."""
    with catalog.read_session() as session:
        return days.snapshot_days(session)


def largest_savings(catalog: Catalog, start: datetime, end: datetime, *, limit: int = 10) -> list[Saving]:
    """The blobs of the day's files that dedup saves the most bytes on."""
    with catalog.read_session() as session:
        return reports.largest_savings(session, start, end, limit)


def snapshots_of_day(catalog: Catalog, start: datetime, end: datetime) -> list[str]:
    """Ids of the snapshots created in [start, end)."""
    with catalog.read_session() as session:
        return days.snapshot_ids_created_between(session, start, end)


__all__ = ["DayStats", "Saving", "day_stats", "days_with_snapshots", "largest_savings",
           "snapshots_of_day"]
