"""One Dagster materialization of `crawl_segments` per segment, on a temporary instance."""

from __future__ import annotations

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
    assert {key: metadata[key].value for key in ("pages", "bytes", "new_blobs", "errors")} == {
        "pages": 120,
        "bytes": 4_800_000,
        "new_blobs": 97,
        "errors": 3,
    }
    assert isinstance(metadata["pages_per_second"], dg.FloatMetadataValue)
    assert metadata["pages_per_second"].value == 2.0
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
