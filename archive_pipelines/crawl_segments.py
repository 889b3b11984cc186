"""Where the crawler and the code location meet: the `crawl_segments` asset's name and partitions.

The crawler (frontier_service's event reporter) materializes this asset; the Dagster wiring
(`assets/crawl.py`) declares it. Both take the name and the partition key from here, so
frontier_service imports this plain module and archive_pipelines never imports frontier_service.
"""

from __future__ import annotations

import datetime as dt

ASSET_NAME = "crawl_segments"
# Its dynamic partitions (one per UTC day with segments): the crawler adds a day before it
# reports the day's first segment.
CRAWL_DAYS = "crawl_days"


def partition_key(day: str) -> str:
    """The daily partition (UTC) of a segment closed on `day` (YYYY-MM-DD).

    Raises:
        ValueError: `day` is not a calendar date.
    """
    return dt.date.fromisoformat(day).isoformat()
