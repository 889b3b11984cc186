"""Partition definitions shared by assets: the days that hold data, and nothing else.

Dynamic partitions, not a calendar: a web archive's data may start in 1996 or yesterday, and
a daily calendar from a fixed start either leaves old data without a partition (the start
was 2015, ArchiveBox imports reach back further) or gives Dagit thousands of empty days, so
that "Materialize all" meant ~13,000 runs and the days with data hid behind "Show all
partitions". Here a day is added when data for it appears (`days_sensor`, the captures
sensor, the crawler's segment events, `make demo`): "all partitions" are the days an
operator has data for. Keys stay UTC calendar days (YYYY-MM-DD), so `day_window` gives the
time window a daily partition would have had.
"""

from datetime import UTC, datetime, timedelta

import dagster as dg

from archive_pipelines.crawl_segments import CRAWL_DAYS

# snapshots, blobs and views, by the UTC day a snapshot was created (ArchiveBox's `added`)
snapshot_days = dg.DynamicPartitionsDefinition(name="snapshot_days")
# crawl_segments and captures, by the UTC day a segment closed (the crawler adds its days)
crawl_days = dg.DynamicPartitionsDefinition(name=CRAWL_DAYS)


def day_window(key: str) -> tuple[datetime, datetime]:
    """[start, end) in UTC of the day partition `key` (YYYY-MM-DD).

    Raises:
        dagster.Failure: the key is not a calendar day (a partition added by hand).
    """
    try:
        start = datetime.fromisoformat(key).replace(tzinfo=UTC)
    except ValueError:
        raise dg.Failure(f"partition {key!r} is not a day (YYYY-MM-DD)") from None
    if start.strftime("%Y-%m-%d") != key:
        raise dg.Failure(f"partition {key!r} is not a day (YYYY-MM-DD)")
    return start, start + timedelta(days=1)


# crawls, by crawl_id (`{definition}-{YYYYmmddTHHMMSS}-{id}`): the crawls sensor adds each
# queued crawl's key as it records it
CRAWL_IDS = "crawl_ids"
crawl_ids = dg.DynamicPartitionsDefinition(name=CRAWL_IDS)
