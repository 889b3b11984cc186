"""The days sensor: every day with data becomes a partition, and only those.

`snapshots`, `blobs` and `views` are partitioned by the days snapshots were created;
`crawl_segments` and `captures` by the days crawl segments closed (see assets/partitions.py).
This sensor adds the days the catalog and sessions/ hold that Dagit does not list yet. It
launches no run, so it is on by default: without it a new day would have no partition to
materialize.
"""

import dagster as dg

from archive_pipelines.assets.partitions import crawl_days, snapshot_days
from archive_pipelines.captures.segment_source import settings_segment_source
from archive_pipelines.resources import CatalogResource
from archive_pipelines.storage.day_stats import days_with_snapshots


def new_day_requests(instance: dg.DagsterInstance, *, snapshot: list[str],
                     crawl: list[str]) -> list[dg.AddDynamicPartitionsRequest]:
    """Requests adding the days of each partition set that the instance does not hold."""
    requests = []
    for partitions, days in ((snapshot_days, snapshot), (crawl_days, crawl)):
        assert partitions.name is not None  # both are named
        known = set(instance.get_dynamic_partitions(partitions.name))
        new = [day for day in days if day not in known]
        if new:
            requests.append(partitions.build_add_request(new))
    return requests


@dg.sensor(minimum_interval_seconds=30, default_status=dg.DefaultSensorStatus.RUNNING,
           description="Adds a partition for each new day with snapshots (snapshots, blobs, "
                       "views) or crawl segments (crawl_segments, captures). Launches no run.")
def days_sensor(context: dg.SensorEvaluationContext, catalog: CatalogResource) -> dg.SensorResult:
    settings = catalog.project_settings()
    snapshot = days_with_snapshots(catalog.open(settings))
    crawl = settings_segment_source(settings).days()
    requests = new_day_requests(context.instance, snapshot=snapshot, crawl=crawl)
    added = [f"{len(r.partition_keys)} {r.partitions_def_name}" for r in requests]
    skip = None if requests else (
        f"no new day: {len(snapshot)} day(s) with snapshots and {len(crawl)} with crawl "
        "segments, each already a partition")
    context.log.info(f"new partitions: {', '.join(added)}" if added else str(skip))
    return dg.SensorResult(dynamic_partitions_requests=requests, skip_reason=skip)
