"""`counts.Counts`: adding two reports of one kind, and listing their counts."""

from collections import Counter

import pytest

from archive_pipelines.counts import dedup_ratio
from archive_pipelines.replication.report import BatchReport
from archive_pipelines.replication.scrub import ScrubReport
from archive_pipelines.storage.file_ingest import IngestReport
from archive_pipelines.storage.view_rebuild import RebuildReport

pytestmark = pytest.mark.unit


def test_add_sums_counts_and_appends_lines() -> None:
    total = IngestReport(files=2, bytes_in=10, errors=["a"])
    total.add(IngestReport(files=3, bytes_in=5, bytes_saved=5, errors=["b"]))
    assert (total.files, total.bytes_in, total.bytes_saved, total.errors) == (5, 15, 5, ["a", "b"])


def test_counts_lists_the_int_fields_in_order() -> None:
    report = RebuildReport(snapshots=1, files=2, links_created=3)
    assert list(report.counts()) == ["snapshots", "files", "links_created", "links_ok",
                                     "links_fixed", "link_conflicts", "links_removed"]
    assert report.counts()["links_created"] == 3


def test_add_sums_counters_per_key_and_keeps_the_first_store_problem() -> None:
    total = BatchReport(requested=1, copies=Counter(a=1), store_problems={"s": "full"})
    total.add(BatchReport(requested=2, copies=Counter(a=1, b=2), store_problems={"s": "down"}))
    assert total.requested == 3
    assert total.copies == Counter(a=2, b=2)
    assert total.store_problems == {"s": "full"}


def test_scrub_pages_add_counts_but_not_seconds() -> None:
    total = ScrubReport("s", checked=1, ok=1, seconds=2.0)
    total.add(ScrubReport("s", checked=2, missing=1, seconds=3.0))
    assert (total.checked, total.ok, total.missing, total.seconds) == (3, 1, 1, 2.0)


@pytest.mark.parametrize(("bytes_in", "bytes_saved", "ratio"), [(0, 0, 1.0), (10, 0, 1.0),
                                                                 (10, 5, 2.0), (10, 10, 1.0)])
def test_dedup_ratio(bytes_in: int, bytes_saved: int, ratio: float) -> None:
    assert dedup_ratio(bytes_in, bytes_saved) == ratio


def test_one_metadata_mapping_for_a_rebuild() -> None:
    report = RebuildReport(snapshots=1, files=2, links_created=3, links_ok=4, links_fixed=5)
    assert report.as_metadata() == {"snapshots": 1, "files": 2, "links": 12, "links_created": 3,
                                    "links_ok": 4, "links_fixed": 5, "link_conflicts": 0,
                                    "links_removed": 0}
