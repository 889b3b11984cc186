"""Tell Dagster about closed crawl segments: one runless materialization of `crawl_segments` each.

The only module of the crawler that imports Dagster. One event per segment (never per
page) keeps the event log small and gives Dagit a plottable pages/bytes series per day.

Each event carries the segment's own figures (`segment_pages` ...) and the day's totals
(`day_pages` ...): the sums over every segment of that day reported to the instance so far,
this one included: the day's latest event plus this segment (one read per report, not the
day's every event; a day whose latest event predates the day totals is summed once from its
events). Crawler processes reporting to one instance take turns (an exclusive lock on a file
in the instance's directory) between reading that event and recording theirs, so the latest
event of a day holds the whole day, however many processes crawl it.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

import dagster as dg

from archive_pipelines.crawl_segments import ASSET_NAME, CRAWL_DAYS, partition_key
from frontier_service.archiving.archiver import SegmentSummary

CRAWL_SEGMENTS = dg.AssetKey(ASSET_NAME)  # declared by the code location (assets/crawl.py)
# A segment's figures that add up over its day (`segment_<name>` each; `day_<name>` the sums).
SUMMED = ("pages", "bytes", "stored_bytes", "new_blobs", "errors")
_LOCK_FILE = ".crawl_segments_report.lock"  # in the instance's directory


def segment_materialization(summary: SegmentSummary, partition_date: str | None = None, *,
                            day_before: dict[str, int] | None = None) -> dg.AssetMaterialization:
    """The materialization event describing one segment, with its day's totals: those of
    the day's segments reported before it (`day_before`, see `day_totals`) plus its own."""
    partition = partition_key(partition_date or summary.partition_date)
    before = day_before or {}
    own = {name: int(getattr(summary, name)) for name in SUMMED}
    metadata: dict[str, dg.MetadataValue] = {
        "day_segments": dg.MetadataValue.int(before.get("segments", 0) + 1),
        **{f"day_{name}": dg.MetadataValue.int(before.get(name, 0) + value)
           for name, value in own.items()},
        **{f"segment_{name}": dg.MetadataValue.int(value) for name, value in own.items()},
        "segment_pages_per_second": dg.MetadataValue.float(
            round(float(summary.pages_per_second), 1)),
    }
    if summary.segment_path is not None:
        metadata["segment_path"] = dg.MetadataValue.path(str(summary.segment_path))
    return dg.AssetMaterialization(asset_key=CRAWL_SEGMENTS, partition=partition, metadata=metadata)


def day_totals(events: Iterable[dg.AssetMaterialization]) -> dict[str, int]:
    """The sums over a day's segment events: `segments` and each of SUMMED (an event from
    before the day totals existed names a segment's figures without `segment_`)."""
    totals = dict.fromkeys(("segments", *SUMMED), 0)
    for event in events:
        totals["segments"] += 1
        for name in SUMMED:
            value = event.metadata.get(f"segment_{name}", event.metadata.get(name))
            if isinstance(value, dg.IntMetadataValue) and value.value is not None:
                totals[name] += value.value
    return totals


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
    """Record one segment on the Dagster instance, with its day's totals; nothing for an
    empty segment.

    Args:
        partition_date: YYYY-MM-DD; defaults to the segment's own date.

    Returns:
        The reported event, or None when the segment held no pages.
    """
    if summary.pages == 0:
        return None
    partition = partition_key(partition_date or summary.partition_date)
    with _reporting_turn(instance):
        _ensure_day(instance, partition)
        event = segment_materialization(summary, partition,
                                        day_before=_day_before(instance, partition))
        instance.report_runless_asset_event(event)
    return event


def _ensure_day(instance: dg.DagsterInstance, day: str) -> None:
    """The asset's partitions are the days with segments: add the day (a no-op when known).
    A reporter on another host may add it between the check and the insert: the insert's
    failure is then no failure, which a second check tells apart from a real one."""
    if instance.has_dynamic_partition(CRAWL_DAYS, day):
        return
    try:
        instance.add_dynamic_partitions(CRAWL_DAYS, [day])
    except Exception:
        if not instance.has_dynamic_partition(CRAWL_DAYS, day):
            raise


def _day_before(instance: dg.DagsterInstance, day: str) -> dict[str, int]:
    """The day's totals so far: the running sums its latest event carries, or the sums over
    its events when that event has none (reported before the day totals existed)."""
    page = instance.fetch_materializations(
        dg.AssetRecordsFilter(CRAWL_SEGMENTS, asset_partitions=[day]), limit=1)
    latest = page.records[0].asset_materialization if page.records else None
    if latest is None:
        return {}
    running: dict[str, int] = {}
    for name in ("segments", *SUMMED):
        value = latest.metadata.get(f"day_{name}")
        if not isinstance(value, dg.IntMetadataValue) or value.value is None:
            return day_totals(_day_events(instance, day))
        running[name] = value.value
    return running


def _day_events(instance: dg.DagsterInstance, day: str) -> Iterator[dg.AssetMaterialization]:
    """Every `crawl_segments` event of the day on the instance (pages of 1,000)."""
    records_filter = dg.AssetRecordsFilter(CRAWL_SEGMENTS, asset_partitions=[day])
    cursor = None
    while True:
        page = instance.fetch_materializations(records_filter, limit=1000, cursor=cursor)
        for record in page.records:
            if record.asset_materialization is not None:
                yield record.asset_materialization
        if not page.has_more:
            return
        cursor = page.cursor


@contextmanager
def _reporting_turn(instance: dg.DagsterInstance) -> Iterator[None]:
    """One reporter at a time on this instance: from reading the day's events to recording
    the next (processes on other hosts sharing a database-backed instance are not held)."""
    path = Path(instance.root_directory) / _LOCK_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
