"""`crawl_segments` as the code location declares it, and as the crawler reports it."""

from __future__ import annotations

import dagster as dg
import pytest

from archive_pipelines.assets.crawl import crawl_segments
from archive_pipelines.crawl_segments import partition_key
from frontier_service.archiving.events import CRAWL_SEGMENTS


def test_spec_declares_daily_partitions_from_2015() -> None:
    spec = crawl_segments
    assert spec.key == dg.AssetKey("crawl_segments") and spec.description
    partitions = spec.partitions_def
    assert isinstance(partitions, dg.DailyPartitionsDefinition)
    assert partitions.get_first_partition_key() == "2015-01-01"
    assert partitions.end_offset == 1
    dg.Definitions(assets=[spec])  # it loads into a code location


def test_the_crawler_reports_the_declared_asset_in_its_partitions() -> None:
    assert crawl_segments.key == CRAWL_SEGMENTS
    partitions = crawl_segments.partitions_def
    assert partitions is not None
    assert partitions.has_partition_key(partition_key("2024-05-17"))


@pytest.mark.parametrize("day", ["17/05/2024", "2024-02-30", "../x", ""])
def test_a_day_that_is_no_date_has_no_partition(day: str) -> None:
    with pytest.raises(ValueError):
        partition_key(day)
