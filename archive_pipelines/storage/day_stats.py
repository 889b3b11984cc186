"""Per-day storage figures for the partitioned `snapshots`, `blobs` and `views` assets."""

from __future__ import annotations

from datetime import datetime

from archive_pipelines.catalog import days
from archive_pipelines.catalog.days import DayStats
from archive_pipelines.catalog.sessions import Catalog


def day_stats(catalog: Catalog, start: datetime, end: datetime) -> DayStats:
    """The figures of the snapshots created in [start, end) (one read transaction)."""
    with catalog.read_session() as session:
        return days.day_stats(session, start, end)


def snapshots_of_day(catalog: Catalog, start: datetime, end: datetime) -> list[str]:
    """Ids of the snapshots created in [start, end)."""
    with catalog.read_session() as session:
        return days.snapshot_ids_created_between(session, start, end)


__all__ = ["DayStats", "day_stats", "snapshots_of_day"]
