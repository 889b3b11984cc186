"""`crawl_segments`: declared here, materialized by the frontier service as it runs."""

from datetime import timedelta

import dagster as dg

from archive_pipelines import crawl_segments as meeting_point
from archive_pipelines.assets.partitions import crawl_days
from archive_pipelines.crawl_segments import ASSET_NAME
from archive_pipelines.run_labels import OWNERS

crawl_segments = dg.AssetSpec(
    ASSET_NAME,
    partitions_def=crawl_days,
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
        "(not by a Dagster run), partitioned by the UTC day the segment closed. "
        "Metadata: pages, bytes, new blobs, errors, pages per second, segment file."
    ),
)
