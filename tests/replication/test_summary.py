"""The run summary and the decision to scan again: pure functions over reports."""

from __future__ import annotations

from collections import Counter

import pytest

from archive_pipelines.replication.director import scan_again
from archive_pipelines.replication.policy import STORES_OUT, TOO_FEW_STORES
from archive_pipelines.replication.report import BatchReport
from archive_pipelines.replication.summary import RunSummary

pytestmark = pytest.mark.unit


def _report(**fields: object) -> BatchReport:
    report = BatchReport()
    for name, value in fields.items():
        setattr(report, name, Counter(value) if isinstance(value, dict) else value)
    return report


@pytest.mark.parametrize(("fields", "again"), [
    ({}, False),  # nothing to do
    ({"planned": 5, "unplaceable": 5}, False),  # nothing changed: stuck
    ({"planned": 5, "copies": {"r": 5}}, False),  # done; what is left cannot improve
    ({"planned": 5, "copies": {"r": 3}, "failures": 2}, True),  # failures worth retrying
    ({"planned": 5, "failures": 5}, False),  # failures, but no progress at all
    ({"planned": 5, "copies": {"r": 4}, "corrupted_found": {"p": 1}}, True),  # new sources?
])
def test_scan_again_only_while_it_can_help(fields: dict[str, object], again: bool) -> None:
    assert scan_again(_report(**fields)) is again


def test_a_met_policy_and_a_limit() -> None:
    met = RunSummary(_report(created={"r": 2}, copies={"r": 3}), ("p", "r"), 0)
    assert met.policy_met and met.copies_made == 2
    assert met.verdict() == "policy met for every blob this run looked at"
    assert met.store_lines() == ["p  0 made, 0 already there, 0 failed, 0 skipped",
                                 "r  2 made, 1 already there, 0 failed, 0 skipped"]
    limited = RunSummary(BatchReport(), ("p",), 0, stopped_early=True)
    assert limited.verdict().endswith("stopped at the batch limit, more blobs may need copies")


def test_an_unmet_policy_says_how_many_and_why() -> None:
    report = _report(failed_copies={"s3r": 1}, skipped_copies={"s3r": 6})
    report.store_problems["s3r"] = "store 's3r': cannot reach the S3 endpoint"
    run = RunSummary(report, ("primary", "s3r"), 9, {STORES_OUT: 6, TOO_FEW_STORES: 2})
    assert not run.policy_met
    assert run.verdict() == (
        "policy NOT met: 9 blob(s) still short of the retention policy (stores out: s3r): "
        f"6 because {STORES_OUT}; 2 because {TOO_FEW_STORES}; "
        "1 because their copies failed or were skipped")
    assert run.store_lines(reasons=False)[1] == (
        "s3r      0 made, 0 already there, 1 failed, 6 skipped  [out for this run]")
    assert run.store_lines()[1].endswith("[out: store 's3r': cannot reach the S3 endpoint]")
    metadata = run.metadata()
    assert metadata["policy_met"] is False and metadata["blobs_short"] == 9
    assert metadata["stores"] == {  # type: ignore[comparison-overlap]
        "primary": {"made": 0, "already": 0, "failed": 0, "skipped": 0, "problem": ""},
        "s3r": {"made": 0, "already": 0, "failed": 1, "skipped": 6,
                "problem": "store 's3r': cannot reach the S3 endpoint"}}
