"""The lines a run's log shows, from the domain reports: what was done, what would be, and
"healthy" only when nothing is left wrong."""

import pytest

from archive_pipelines.storage.gc import GcReport, Tally
from archive_pipelines.storage.verify import VerifyReport


@pytest.mark.unit
@pytest.mark.parametrize(("dry_run", "first"), [
    (True, "dry run, nothing changed: would free 2.0 KiB in 3 blob(s) of 4 unreferenced past "
           "the grace period"),
    (False, "freed 2.0 KiB in 3 blob(s) of 4 unreferenced past the grace period"),
])
def test_gc_says_what_it_freed_or_would_free(dry_run: bool, first: str) -> None:
    report = GcReport(dry_run=dry_run, candidates=4, blobs=Tally(count=3, bytes=2048),
                      revived=1)
    lines = report.log_lines()
    assert lines == [first, "kept or skipped: 1 referenced again meanwhile"]


@pytest.mark.unit
def test_verify_is_healthy_only_without_problems_left() -> None:
    report = VerifyReport(blobs_checked=5, links_checked=9)
    report.found["orphan_blobs"] = 2  # gc's work, not a problem
    assert report.log_lines()[0] == "healthy: 5 referenced blobs and 9 view links checked"
    report.note("wrong_links", "archive/by_date/x")
    report.note("missing_blob_files", "ab12")
    lines = report.log_lines()
    assert lines[0] == ("2 problem(s): 1 missing blob files, 1 wrong links (5 referenced blobs "
                        "and 9 view links checked)")
    assert "  wrong links, e.g. archive/by_date/x" in lines
    report.fixed["wrong_links"] = 1
    assert report.log_lines()[0].startswith("1 problem(s): 1 missing blob files (")
    assert "fixed: 1 wrong links" in report.log_lines()
