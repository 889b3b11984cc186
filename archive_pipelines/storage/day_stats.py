"""Per-day storage figures for the partitioned `snapshots`, `blobs` and `views` assets."""

from __future__ import annotations

from datetime import datetime

from archive_pipelines.catalog import days
from archive_pipelines.catalog.days import DayStats
from archive_pipelines.storage.context import Storage


def day_stats(storage: Storage, start: datetime, end: datetime) -> DayStats:
    """The figures of the snapshots created in [start, end) (one read transaction)."""
    with storage.read_session() as session:
        return days.day_stats(session, start, end)


def snapshots_of_day(storage: Storage, start: datetime, end: datetime) -> list[str]:
    """Ids of the snapshots created in [start, end)."""
    with storage.read_session() as session:
        return days.snapshot_ids_created_between(session, start, end)


__all__ = ["DayStats", "day_stats", "snapshots_of_day"]
