"""The captures sensor: days with crawl segments not yet in the catalog become `captures` runs.

Each tick lists the segment files under sessions/ and reads the ledger once (`pending_segments`):
the disk is the truth, so segments of a crawl run without Dagster, or whose event was lost, are
found like the others. The `crawl_segments` events the crawler reported since the cursor are
read too: they mark the runs they triggered, and a reported segment outside the configured data
dir (a crawler writing elsewhere, whose pages would never be ingested) is logged as a warning.

One run per day; its run key is the hash of the day's pending segment paths, so a day is not
requested again while nothing changes (an ingested day has none; a segment that keeps failing
keeps its key), and a new segment, or a run killed halfway, gives a new key. A day whose
captures run is still queued or running is left alone until it ends.
"""

from __future__ import annotations

import os
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import dagster as dg

from archive_pipelines.assets.captures import captures_job
from archive_pipelines.assets.crawl import crawl_segments
from archive_pipelines.captures.ingest import pending_segments
from archive_pipelines.captures.segment_files import SegmentPath
from archive_pipelines.resources import CatalogResource
from archive_pipelines.sensors.days import new_day_requests
from archive_pipelines.sensors.run_keys import batch_run_key

MAX_EVENTS = 1000  # crawl_segments events read per tick; the next tick reads on from the cursor
IN_FLIGHT = [dg.DagsterRunStatus.QUEUED, dg.DagsterRunStatus.NOT_STARTED,
             dg.DagsterRunStatus.STARTING, dg.DagsterRunStatus.STARTED,
             dg.DagsterRunStatus.CANCELING]
PARTITION_TAG = "dagster/partition"


@dataclass(frozen=True)
class DayRun:
    """A `captures` run to request: the day, its run key, its pending segments, and whether a
    crawl_segments event reported the day since the last tick."""

    day: str
    run_key: str
    segments: int
    reported: bool


def plan_capture_runs(pending: list[SegmentPath], *, busy_days: set[str],
                      reported_days: set[str]) -> list[DayRun]:
    """One run per day with pending segments and no run in flight, keyed by the segment set."""
    by_day: dict[str, list[str]] = defaultdict(list)
    for segment in pending:
        by_day[segment.day].append(segment.relative)
    return [DayRun(day, batch_run_key(f"captures-{day}", sorted(paths)), len(paths),
                   day in reported_days)
            for day, paths in sorted(by_day.items()) if day not in busy_days]


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

    pending, _skipped = pending_segments(catalog.open(settings),
                                         settings.data_dir)
    runs = plan_capture_runs(pending, busy_days=_busy_days(context.instance),
                             reported_days=reported_days)
    # A day's partition is added with its first run (the days sensor may not have seen it yet).
    new_days = new_day_requests(context.instance, snapshot=[],
                                crawl=sorted({run.day for run in runs}))
    requests = [dg.RunRequest(
        run_key=run.run_key, partition_key=run.day,
        tags={"captures/pending_segments": str(run.segments),
              "captures/trigger": "crawl_segments" if run.reported else "disk scan"})
        for run in runs]
    skip = None if requests else skip_reason(pending, len(events))
    return dg.SensorResult(run_requests=requests, cursor=cursor, skip_reason=skip,
                           dynamic_partitions_requests=new_days)


def skip_reason(pending: list[SegmentPath], events: int) -> str:
    """Why a tick requests no run, in an operator's words."""
    if not pending:
        return (f"nothing to ingest: every crawl segment under sessions/ is in the catalog "
                f"({events} crawl_segments event(s) since the last tick)")
    days = sorted({segment.day for segment in pending})
    return (f"{len(pending)} segment(s) wait for the captures run of their day to end "
            f"({', '.join(days[:5])}{' ...' if len(days) > 5 else ''})")


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


def outside_data_dir(paths: list[str], data_dir: Path) -> list[str]:
    """The reported segment files that are not under `data_dir/sessions`."""
    sessions = os.path.realpath(data_dir / "sessions")
    return [path for path in paths if not os.path.realpath(path).startswith(sessions + os.sep)]
