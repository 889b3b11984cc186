"""Tell Dagster about closed crawl segments: one runless materialization of `crawl_segments` each.

The only module of the crawler that imports Dagster. One event per segment (never per
page) keeps the event log small and gives Dagit a plottable pages/bytes series per day.
"""

from __future__ import annotations

import datetime as dt

import dagster as dg

from frontier_service.archiving.archiver import SegmentSummary

CRAWL_SEGMENTS = dg.AssetKey("crawl_segments")
CRAWL_SEGMENTS_START_DATE = "2015-01-01"


def crawl_segments_partitions() -> dg.DailyPartitionsDefinition:
    """Daily partitions (UTC) from 2015 through tomorrow, so today's segments always have one."""
    return dg.DailyPartitionsDefinition(start_date=CRAWL_SEGMENTS_START_DATE, end_offset=1)


def crawl_segments_spec() -> dg.AssetSpec:
    """Declaration of the `crawl_segments` asset, for the code location's `Definitions`."""
    return dg.AssetSpec(
        CRAWL_SEGMENTS,
        partitions_def=crawl_segments_partitions(),
        group_name="crawler",
        description=(
            "Pages archived by the frontier crawler. Each materialization is one closed "
            "segment: a batch of page-fetch records in sessions/{date}/{session_id}/ with "
            "its bodies in the blob store. Reported by the crawler service as it runs "
            "(not by a Dagster run), partitioned by the UTC day the segment closed. "
            "Metadata: pages, bytes, new blobs, errors, pages per second, segment file."
        ),
    )


def segment_materialization(
    summary: SegmentSummary, partition_date: str | None = None
) -> dg.AssetMaterialization:
    """The materialization event describing one segment."""
    partition = dt.date.fromisoformat(partition_date or summary.partition_date).isoformat()
    metadata: dict[str, dg.MetadataValue] = {
        "pages": dg.MetadataValue.int(summary.pages),
        "bytes": dg.MetadataValue.int(summary.bytes),
        "new_blobs": dg.MetadataValue.int(summary.new_blobs),
        "errors": dg.MetadataValue.int(summary.errors),
        "pages_per_second": dg.MetadataValue.float(float(summary.pages_per_second)),
    }
    if summary.segment_path is not None:
        metadata["segment_path"] = dg.MetadataValue.path(str(summary.segment_path))
    return dg.AssetMaterialization(asset_key=CRAWL_SEGMENTS, partition=partition, metadata=metadata)


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
    instance.report_runless_asset_event(event)
    return event
