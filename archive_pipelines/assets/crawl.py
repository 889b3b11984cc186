"""`crawl_segments`: declared here, materialized by the frontier service as it runs."""

from datetime import timedelta

import dagster as dg

from archive_pipelines import crawl_segments as meeting_point
from archive_pipelines.assets.crawl_requests import crawls
from archive_pipelines.assets.partitions import crawl_days
from archive_pipelines.crawl_segments import ASSET_NAME
from archive_pipelines.run_labels import OWNERS

crawl_segments = dg.AssetSpec(
    ASSET_NAME,
    partitions_def=crawl_days,
    # Lineage only: any crawl's pages may close segments on any day.
    deps=[dg.AssetDep(crawls, partition_mapping=dg.AllPartitionMapping())],
    group_name="crawler",
    kinds={"python", "filesystem"},
    owners=OWNERS,
    tags={"area": "crawler", "blob_store": "writes"},
    # A crawl closes a segment every few minutes; a day without one means no crawler runs.
    freshness_policy=dg.FreshnessPolicy.time_window(fail_window=timedelta(hours=24),
                                                    warn_window=timedelta(hours=6)),
    metadata={"dagster/code_references": dg.CodeReferencesMetadataValue(code_references=[
        dg.LocalFileCodeReference(file_path=str(meeting_point.__file__), line_number=1,
                                  label="archive_pipelines.crawl_segments (the crawler reports "
                                        "its segments with this name and partition)")])},
    description=(
        "Pages archived by the frontier crawler. Each materialization is one closed "
        "segment: a batch of page-fetch records in sessions/{date}/{session_id}/ with "
        "its bodies in the blob store. Reported by the crawler service as it runs "
        "(not by a Dagster run), partitioned by the UTC day the segment closed.\n\n"
        "Metadata: the day's totals so far (day_segments, day_pages, day_bytes, "
        "day_stored_bytes, day_new_blobs, day_errors), so a day's latest materialization "
        "holds the whole day; then the segment's own figures (segment_pages ... "
        "segment_pages_per_second, segment_path). The day's totals are the sums over every "
        "segment of that day reported to this Dagster instance, read from its events when "
        "a segment is reported: crawler processes on one machine take turns, so several "
        "processes crawling one day add up. Pages are the pages the crawler fetched and "
        "archived; a URL it skipped (refused by robots.txt, out of scope) is a record in "
        "the segment but not a page here, while the `captures` asset, which counts what "
        "the catalog holds, counts it as a page too."
    ),
)
