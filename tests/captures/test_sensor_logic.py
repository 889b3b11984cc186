"""The captures sensor's pure decisions: one run per day, keyed by its pending segments."""

from pathlib import Path

import pytest

from archive_pipelines.captures.segment_files import SegmentPath
from archive_pipelines.captures.sensor_logic import (
    CaptureRuns,
    outside_data_dir,
    plan_capture_runs,
    skip_reason,
)

pytestmark = pytest.mark.unit


def _segment(day: str, name: str) -> SegmentPath:
    session = "0" * 8 + "-0000-4000-8000-" + "0" * 12
    return SegmentPath(Path("/data"), f"sessions/{day}/{session}/{name}", session, day)


def test_run_keys_follow_the_set_of_pending_segments() -> None:
    a, b = _segment("2024-05-17", "a.jsonl"), _segment("2024-05-17", "b.jsonl")
    other = _segment("2024-05-18", "a.jsonl")

    def keys(pending: list[SegmentPath], busy: frozenset[str] = frozenset()) -> dict[str, str]:
        return {run.day: run.run_key for run in plan_capture_runs(
            pending, busy_days=set(busy), reported_days=set())}

    both = keys([a, b, other])
    assert both == keys([other, b, a])  # the same set: the same keys, in any order
    assert keys([a, other])["2024-05-17"] != both["2024-05-17"]  # the set changed
    assert keys([a, other])["2024-05-18"] == both["2024-05-18"]
    assert keys([a, b, other], frozenset({"2024-05-17"})).keys() == {"2024-05-18"}
    assert keys([]) == {}


def test_runs_say_whether_the_crawler_reported_their_day() -> None:
    a, other = _segment("2024-05-17", "a.jsonl"), _segment("2024-05-18", "a.jsonl")
    runs = plan_capture_runs([a, other], busy_days=set(), reported_days={"2024-05-18"})
    assert [(run.day, run.segments, run.reported) for run in runs] == [
        ("2024-05-17", 1, False), ("2024-05-18", 1, True)]


def test_a_tick_without_runs_says_why() -> None:
    a = _segment("2024-05-17", "a.jsonl")
    assert "nothing to ingest" in skip_reason([], 3)
    assert "(3 crawl_segments event(s)" in skip_reason([], 3)
    assert skip_reason([a], 0).startswith("1 segment(s) wait for the captures run of their day")
    assert "2024-05-17" in skip_reason([a], 0)
    busy = CaptureRuns(runs=[], pending=[a])
    assert busy.skip_reason(0) == skip_reason([a], 0)
    planned = CaptureRuns(plan_capture_runs([a], busy_days=set(), reported_days=set()), [a])
    assert planned.skip_reason(0) is None


def test_reported_segments_outside_the_data_dir(tmp_path: Path) -> None:
    inside = tmp_path / "data" / "sessions" / "2024-05-17" / "s" / "a.jsonl"
    elsewhere = tmp_path / "other" / "sessions" / "2024-05-17" / "s" / "a.jsonl"
    assert outside_data_dir([str(inside), str(elsewhere)], tmp_path / "data") == [str(elsewhere)]
