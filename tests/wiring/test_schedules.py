"""The interval schedules read their interval from the configured settings resource."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import dagster as dg
import pytest

from archive_pipelines.resources import SettingsResource
from archive_pipelines.sensors.schedules import scrub_schedule, verify_storage_schedule


@pytest.mark.parametrize("schedule", [verify_storage_schedule, scrub_schedule])
def test_a_schedule_reads_the_configured_data_dir_not_the_environment(
    schedule: dg.ScheduleDefinition, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    dagster_instance: dg.DagsterInstance,
) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "archive.toml").write_text("[storage\n")  # unreadable: must not be read
    monkeypatch.setenv("ARCHIVE_DATA_DIR", str(elsewhere))
    data = tmp_path / "data"
    data.mkdir()
    (data / "archive.toml").write_text("[storage]\nverify_interval_hours = 5\n"
                                       "[replication]\nscrub_interval_hours = 5\n")
    with dg.build_schedule_context(
            instance=dagster_instance, resources={"settings": SettingsResource(data_dir=str(data))},
            scheduled_execution_time=datetime(2025, 1, 1, tzinfo=UTC)) as context:
        request = schedule(context)
    assert isinstance(request, dg.RunRequest)
    assert request.run_key == f"{schedule.job_name}-2025010100"
