"""One Dagster materialization of `crawl_segments` per segment, on a temporary instance."""

from __future__ import annotations

import multiprocessing
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import dagster as dg
import pytest

from frontier_service.archiving import SegmentSummary
from frontier_service.archiving.events import CRAWL_SEGMENTS, report_segment, segment_materialization


def summary(
    pages: int = 120, path: Path | None = Path("/data/sessions/2024-05-17/s/x.jsonl")
) -> SegmentSummary:
    return SegmentSummary(
        session_id="6d2f1a9e-8b7c-4e3d-a1f0-123456789abc",
        pages=pages,
        bytes=4_800_000,
        stored_bytes=3_000_000,
        new_blobs=97,
        errors=3,
        started=1_715_947_200.0,
        ended=1_715_947_260.0,
        pages_per_second=2.0,
        segment_path=path,
        partition_date="2024-05-17",
    )


def materializations(instance: dg.DagsterInstance) -> list[dg.AssetMaterialization]:
    records = instance.fetch_materializations(CRAWL_SEGMENTS, limit=100).records
    return [r.asset_materialization for r in records if r.asset_materialization is not None]


def test_one_segment_is_one_materialization() -> None:
    with dg.instance_for_test() as instance:
        event = report_segment(instance, summary(), "2024-05-17")
        (stored,) = materializations(instance)
    assert event is not None and stored.partition == "2024-05-17"
    assert stored.asset_key == dg.AssetKey("crawl_segments")
    metadata = stored.metadata
    own = {"pages": 120, "bytes": 4_800_000, "stored_bytes": 3_000_000, "new_blobs": 97,
           "errors": 3}
    assert {key: metadata[f"segment_{key}"].value for key in own} == own
    assert {key: metadata[f"day_{key}"].value for key in own} == own  # the day's first
    assert metadata["day_segments"].value == 1
    assert isinstance(metadata["segment_pages_per_second"], dg.FloatMetadataValue)
    assert metadata["segment_pages_per_second"].value == 2.0
    assert isinstance(metadata["segment_path"], dg.PathMetadataValue)
    assert metadata["segment_path"].value == "/data/sessions/2024-05-17/s/x.jsonl"


def test_partition_defaults_to_the_segment_date_and_empty_segments_are_silent() -> None:
    with dg.instance_for_test() as instance:
        assert report_segment(instance, summary(pages=0, path=None)) is None
        report_segment(instance, summary())
        report_segment(instance, summary())
        assert [m.partition for m in materializations(instance)] == ["2024-05-17", "2024-05-17"]


@pytest.mark.unit
@pytest.mark.parametrize("partition", ["17/05/2024", "2024-02-30", "../x"])
def test_bad_partition_is_refused(partition: str) -> None:
    with pytest.raises(ValueError):
        segment_materialization(summary(), partition)


def test_each_event_holds_its_days_totals_so_far() -> None:
    """A day's latest event sums the day's segments (an event from before the totals existed
    counts by its plain names); another day's segments are not in it."""
    with dg.instance_for_test() as instance:
        instance.report_runless_asset_event(dg.AssetMaterialization(  # an older crawler's
            asset_key=CRAWL_SEGMENTS, partition="2024-05-17",
            metadata={"pages": dg.MetadataValue.int(10), "bytes": dg.MetadataValue.int(5)}))
        for pages in (120, 30, 980):
            report_segment(instance, summary(pages=pages))
        report_segment(instance, summary(pages=7), "2024-05-18")
        latest = {m.partition: m for m in reversed(materializations(instance))}  # newest last
    day = latest["2024-05-17"].metadata
    assert day["segment_pages"].value == 980
    assert day["day_pages"].value == 10 + 120 + 30 + 980 and day["day_segments"].value == 4
    assert day["day_bytes"].value == 5 + 3 * 4_800_000 and day["day_errors"].value == 3 * 3
    other = latest["2024-05-18"].metadata
    assert other["day_pages"].value == 7 and other["day_segments"].value == 1


def test_reporters_in_several_processes_add_up_on_one_instance(tmp_path: Path) -> None:
    """Crawler processes reporting the same day at once: the day's last event counts every
    segment (each reporter reads the day's events and records its own in turn)."""
    home = tmp_path / "dagster_home"
    home.mkdir()
    (home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    dg.DagsterInstance.from_config(str(home)).dispose()  # its storage made, not raced for
    context = multiprocessing.get_context("spawn")
    # An executor, not a Pool: its exit waits for the workers to finish (a Pool's terminates
    # them, and a worker caught in Dagster's SIGTERM handling can hang that join), and a
    # worker's error is raised here.
    with ProcessPoolExecutor(4, mp_context=context) as workers:
        for done in [workers.submit(_report_many, str(home), 10) for _ in range(4)]:
            done.result(timeout=240)
    with dg.DagsterInstance.from_config(str(home)) as instance:
        events = materializations(instance)
    assert len(events) == 40
    assert max(int(e.metadata["day_pages"].value) for e in events) == 40 * 120  # type: ignore[arg-type]
    assert sorted(int(e.metadata["day_segments"].value) for e in events) == list(range(1, 41))  # type: ignore[arg-type]


def _report_many(home: str, count: int) -> None:
    with dg.DagsterInstance.from_config(home) as instance:
        for _ in range(count):
            report_segment(instance, summary())
