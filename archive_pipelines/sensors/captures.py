"""The captures sensor: days with crawl segments not yet in the catalog become `captures` runs.

The decision is `captures.sensor_logic.next_capture_runs`. The `crawl_segments` events the
crawler reported since the cursor are read here: they mark the runs they triggered, and a
reported segment outside the configured data dir (a crawler writing elsewhere, whose pages
would never be ingested) is logged as a warning.
"""


from __future__ import annotations

from collections.abc import Sequence

import dagster as dg

from archive_pipelines.assets.captures import captures_job
from archive_pipelines.assets.crawl import crawl_segments
from archive_pipelines.captures.segment_source import settings_segment_source
from archive_pipelines.captures.sensor_logic import next_capture_runs, outside_data_dir
from archive_pipelines.resources import CatalogResource
from archive_pipelines.run_labels import launched_by
from archive_pipelines.sensors.days import new_day_requests

MAX_EVENTS = 1000  # crawl_segments events read per tick; the next tick reads on from the cursor
IN_FLIGHT = [dg.DagsterRunStatus.QUEUED, dg.DagsterRunStatus.NOT_STARTED,
             dg.DagsterRunStatus.STARTING, dg.DagsterRunStatus.STARTED,
             dg.DagsterRunStatus.CANCELING]
PARTITION_TAG = "dagster/partition"


@dg.sensor(job=captures_job, minimum_interval_seconds=60,
           default_status=dg.DefaultSensorStatus.RUNNING,
           description="Finds crawl segments the catalog does not hold yet (on disk, reported "
                       "by the crawler or not) and launches one captures run per day.")
def captures_sensor(context: dg.SensorEvaluationContext,
                    catalog: CatalogResource) -> dg.SensorResult:
    settings = catalog.project_settings()
    events = context.instance.fetch_materializations(
        dg.AssetRecordsFilter(asset_key=crawl_segments.key,
                              after_storage_id=int(context.cursor) if context.cursor else None),
        limit=MAX_EVENTS, ascending=True).records
    cursor = str(events[-1].storage_id) if events else context.cursor
    reported_days = {e.partition_key for e in events if e.partition_key}
    for path in outside_data_dir(reported_paths(events), settings.data_dir):
        context.log.warning(f"crawl_segments reported {path}, outside {settings.data_dir}: the "
                            "crawler writes to another data dir, its segments are not ingested here")

    plan = next_capture_runs(catalog.open(settings), settings.data_dir,
                             busy_days=_busy_days(context.instance), reported_days=reported_days,
                             source=settings_segment_source(settings))
    runs = plan.runs
    # A day's partition is added with its first run (the days sensor may not have seen it yet).
    new_days = new_day_requests(context.instance, snapshot=[],
                                crawl=sorted({run.day for run in runs}))
    requests = [dg.RunRequest(
        run_key=run.run_key, partition_key=run.day,
        tags={"captures/pending_segments": str(run.segments),
              "captures/trigger": "crawl_segments" if run.reported else "disk scan",
              **launched_by("sensor", "captures_sensor")})
        for run in runs]
    skip = plan.skip_reason(len(events))
    # The tick's decision in its log ("View logs" on the tick), run or skip.
    context.log.info(skip or "launching captures runs for " + ", ".join(
        f"{run.day} ({run.segments} segment(s) pending)" for run in runs))
    return dg.SensorResult(run_requests=requests, cursor=cursor, skip_reason=skip,
                           dynamic_partitions_requests=new_days)


def _busy_days(instance: dg.DagsterInstance) -> set[str]:
    """Days whose captures run is queued or running (one run-storage query)."""
    records = instance.get_run_records(
        filters=dg.RunsFilter(job_name=captures_job.name, statuses=IN_FLIGHT))
    return {day for r in records if (day := r.dagster_run.tags.get(PARTITION_TAG))}


def reported_paths(events: Sequence[dg.EventLogRecord]) -> list[str]:
    """The segment files named by crawl_segments events (`segment_path` metadata)."""
    paths = []
    for event in events:
        materialization = event.asset_materialization
        entry = materialization.metadata.get("segment_path") if materialization else None
        if isinstance(entry, dg.PathMetadataValue):
            paths.append(str(entry.path))
    return paths
