"""`crawl_segments`: declared here, materialized by the frontier service as it runs."""

import dagster as dg

from archive_pipelines.assets.partitions import crawl_days
from archive_pipelines.crawl_segments import ASSET_NAME

crawl_segments = dg.AssetSpec(
    ASSET_NAME,
    partitions_def=crawl_days,
    group_name="crawler",
    description=(
        "Pages archived by the frontier crawler. Each materialization is one closed "
        "segment: a batch of page-fetch records in sessions/{date}/{session_id}/ with "
        "its bodies in the blob store. Reported by the crawler service as it runs "
        "(not by a Dagster run), partitioned by the UTC day the segment closed. "
        "Metadata: pages, bytes, new blobs, errors, pages per second, segment file."
    ),
)
