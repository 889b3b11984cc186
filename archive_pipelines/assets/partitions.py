"""Partition definitions shared by assets."""

import dagster as dg

# Snapshot days. Legacy ArchiveBox collections reach back to 2017; crawls are today.
snapshot_days = dg.DailyPartitionsDefinition(start_date="2015-01-01", end_offset=1)
