"""Tell Dagster about closed crawl segments: one runless materialization of `crawl_segments` each.

The only module of the crawler that imports Dagster. One event per segment (never per
page) keeps the event log small and gives Dagit a plottable pages/bytes series per day.
"""

from __future__ import annotations

import os
from pathlib import Path

import dagster as dg

from archive_pipelines.crawl_segments import ASSET_NAME, CRAWL_DAYS, partition_key
from frontier_service.archiving.archiver import SegmentSummary

CRAWL_SEGMENTS = dg.AssetKey(ASSET_NAME)  # declared by the code location (assets/crawl.py)


def segment_materialization(
    summary: SegmentSummary, partition_date: str | None = None
) -> dg.AssetMaterialization:
    """The materialization event describing one segment."""
    partition = partition_key(partition_date or summary.partition_date)
    metadata: dict[str, dg.MetadataValue] = {
        "pages": dg.MetadataValue.int(summary.pages),
        "bytes": dg.MetadataValue.int(summary.bytes),
        "new_blobs": dg.MetadataValue.int(summary.new_blobs),
        "errors": dg.MetadataValue.int(summary.errors),
        "pages_per_second": dg.MetadataValue.float(round(float(summary.pages_per_second), 1)),
    }
    if summary.segment_path is not None:
        metadata["segment_path"] = dg.MetadataValue.path(str(summary.segment_path))
    return dg.AssetMaterialization(asset_key=CRAWL_SEGMENTS, partition=partition, metadata=metadata)


def open_instance(dagster_home: Path) -> dg.DagsterInstance:
    """The Dagster instance in `dagster_home`: `DagsterInstance.get()` when DAGSTER_HOME names it,
    else the same instance from its config without touching the environment (--dagster-home).
    """
    if os.environ.get("DAGSTER_HOME") == str(dagster_home):
        return dg.DagsterInstance.get()
    return dg.DagsterInstance.from_config(str(dagster_home))


def report_segment(
    instance: dg.DagsterInstance, summary: SegmentSummary, partition_date: str | None = None
) -> dg.AssetMaterialization | None:
    """Record one segment on the Dagster instance; nothing for an empty segment.

    Args:
        partition_date: YYYY-MM-DD; defaults to the segment's own date.

    Returns:
        The reported event, or None when the segment held no pages.
    """
    if summary.pages == 0:
        return None
    event = segment_materialization(summary, partition_date)
    assert event.partition is not None  # segment_materialization always sets it
    # The asset's partitions are the days with segments: the day first (a no-op when known).
    if not instance.has_dynamic_partition(CRAWL_DAYS, event.partition):
        instance.add_dynamic_partitions(CRAWL_DAYS, [event.partition])
    instance.report_runless_asset_event(event)
    return event
