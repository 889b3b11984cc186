"""`crawl_segments` as the code location declares it, and as the crawler reports it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import dagster as dg
import pytest

from archive_pipelines.assets.captures import captures
from archive_pipelines.assets.crawl import crawl_segments
from archive_pipelines.crawl_segments import CRAWL_DAYS, partition_key
from archive_pipelines.resources import CatalogResource, SettingsResource, StorageResource
from frontier_service.archiving.archiver import SegmentSummary
from frontier_service.archiving.events import CRAWL_SEGMENTS, report_segment
from tests.helpers.crawls import Crawled


@pytest.mark.unit
def test_spec_declares_the_crawl_days_as_dynamic_partitions() -> None:
    spec = crawl_segments
    assert spec.key == dg.AssetKey("crawl_segments") and spec.description
    partitions = spec.partitions_def
    assert isinstance(partitions, dg.DynamicPartitionsDefinition)
    assert partitions.name == CRAWL_DAYS
    dg.Definitions(assets=[spec])  # it loads into a code location


@pytest.mark.unit
def test_the_crawler_adds_its_day_then_reports_the_declared_asset() -> None:
    assert crawl_segments.key == CRAWL_SEGMENTS
    partitions = crawl_segments.partitions_def
    assert partitions is not None
    with dg.instance_for_test() as instance:
        assert not partitions.has_partition_key("2024-05-17", dynamic_partitions_store=instance)
        report_segment(instance, _summary("2024-05-17"))
        report_segment(instance, _summary("2024-05-17"))  # the day once
        assert instance.get_dynamic_partitions(CRAWL_DAYS) == [partition_key("2024-05-17")]
        [event] = instance.fetch_materializations(CRAWL_SEGMENTS, limit=1).records
        assert event.partition_key == "2024-05-17"


def _summary(day: str) -> SegmentSummary:
    return SegmentSummary(session_id="s", pages=3, bytes=10, stored_bytes=10, new_blobs=1,
                          errors=0, started=0.0, ended=1.0, pages_per_second=12.345,
                          segment_path=None, partition_date=day)


@pytest.mark.unit
@pytest.mark.parametrize("day", ["17/05/2024", "2024-02-30", "../x", ""])
def test_a_day_that_is_no_date_has_no_partition(day: str) -> None:
    with pytest.raises(ValueError):
        partition_key(day)


def test_a_days_latest_segment_event_holds_the_day_the_catalog_ingests(
        crawled: Crawled, crawl_data: Path, dagster_instance: dg.DagsterInstance,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The crawl reported each segment to its Dagster home: each day's latest event sums
    the day's segments, as the catalog counts them once `captures` has ingested the day."""
    monkeypatch.delenv("DATABASE_URL", raising=False)  # the resources' catalog: the data dir's
    with dg.DagsterInstance.from_config(str(crawled.dagster_home)) as reported:
        records = reported.fetch_materializations(CRAWL_SEGMENTS, limit=10_000).records
    events = [r.asset_materialization for r in records if r.asset_materialization]
    latest: dict[str, dict[str, Any]] = {}
    for event in reversed(events):  # oldest first: each day's newest stays
        assert event.partition is not None
        latest[event.partition] = {k: v.value for k, v in event.metadata.items()}
    assert len(events) >= 2 and len(events) == sum(d["day_segments"] for d in latest.values())
    settings = SettingsResource(data_dir=str(crawl_data))
    resources = {"storage": StorageResource(catalog=CatalogResource(settings=settings))}
    dagster_instance.add_dynamic_partitions("crawl_days", sorted(latest))
    for day, reported_day in latest.items():
        result = dg.materialize([captures], partition_key=day, instance=dagster_instance,
                                resources=resources)
        [ingested] = result.asset_materializations_for_node("captures")
        catalog = {k: v.value for k, v in ingested.metadata.items()}
        assert reported_day["day_segments"] == catalog["day_segments"], day
        # The crawler counts the pages it fetched; a URL it skipped (robots.txt ...) is a
        # record with no request, which the catalog holds as a page too.
        skipped = _records_without_requests(crawl_data, day)
        assert reported_day["day_pages"] == catalog["day_pages"] - skipped, day
        assert reported_day["day_pages"] > reported_day["segment_pages"] or \
            reported_day["day_segments"] == 1


def _records_without_requests(data: Path, day: str) -> int:
    """The day's segment records of URLs the crawler did not fetch (nothing sent)."""
    return sum(1 for path in (data / "sessions" / day).glob("*/*.jsonl")
               for line in path.read_bytes().splitlines() if line and not json.loads(line)["requests"])
