"""Partition definitions shared by assets."""

import dagster as dg

# UTC days from 2015 through tomorrow, so today always has a partition. Legacy ArchiveBox
# collections reach back to 2017; crawl segments fall on the day they closed.
utc_days = dg.DailyPartitionsDefinition(start_date="2015-01-01", end_offset=1)

snapshot_days = utc_days  # snapshots, blobs and views, by the snapshot's day
crawl_days = utc_days  # crawl_segments, by the day a segment closed
