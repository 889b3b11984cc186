"""Failed runs recorded in logs/run-failures.jsonl: appended, read back as written."""

from datetime import UTC, datetime
from pathlib import Path

import pytest

from archive_pipelines.datadir.run_failures import RunFailure, read_run_failures, record_run_failure


@pytest.mark.unit
def test_failures_are_appended_and_read_back(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    assert read_run_failures(logs) == []
    first = RunFailure(run_id="r1", job_name="gc_job", launched_by="schedule:x",
                       failed_at=datetime(2026, 1, 2, 3, 4, tzinfo=UTC), message="boom")
    second = RunFailure(run_id="r2", job_name="captures_job", launched_by="",
                        failed_at=datetime(2026, 1, 3, tzinfo=UTC), message="cut", partition="2026-01-02")
    path = record_run_failure(logs, first)
    assert record_run_failure(logs, second) == path == logs / "run-failures.jsonl"
    assert read_run_failures(logs) == [first, second]
    assert len(path.read_text().splitlines()) == 2
    assert second.line() == ("run r2 of captures_job (partition 2026-01-02), launched by unknown, "
                             "failed: cut")
