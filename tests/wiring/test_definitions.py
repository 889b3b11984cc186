"""The code location: what `defs` exposes, and Dagster's own CLI loading it."""

import os
import subprocess
import sys
from pathlib import Path

import dagster as dg
import pytest

from archive_pipelines.definitions import defs

ROOT = Path(__file__).resolve().parents[2]
DAGSTER = str(Path(sys.executable).with_name("dagster"))


@pytest.mark.unit
def test_defs_expose_the_expected_names() -> None:
    repo = defs.get_repository_def()
    assert {"init_job", "verify_storage_job", "rebuild_views_job", "migrate_to_cas_job",
            "gc_job"} <= {job.name for job in repo.get_all_jobs()}
    assert {"settings", "catalog", "storage"} <= set(defs.resources or {})
    keys = {key.to_user_string() for key in repo.asset_graph.get_all_asset_keys()}
    assert {"blobs", "views", "crawl_segments", "replica_copies"} <= keys
    assert {"verify_storage_schedule", "scrub_schedule"} <= {s.name for s in repo.schedule_defs}
    assert "crawls" in keys and "crawl_job" in {job.name for job in repo.get_all_jobs()}
    assert "crawls_sensor" in {s.name for s in repo.sensor_defs}
    assert "archival_director_sensor" in {s.name for s in repo.sensor_defs}
    assert {"archive_batch_job", "archive_director_job", "scrub_job"} <= {
        job.name for job in repo.get_all_jobs()}


def _env(data: Path, home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL",)}
    env.update(ARCHIVE_DATA_DIR=str(data), DAGSTER_HOME=str(home))
    return env


def test_dagster_definitions_validate(tmp_path: Path, dagster_home: Path) -> None:
    result = subprocess.run([DAGSTER, "definitions", "validate", "-w", "workspace.yaml"],
                            cwd=ROOT, capture_output=True, text=True, timeout=300,
                            env=_env(tmp_path / "data", dagster_home))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "All code locations passed validation" in result.stdout + result.stderr


def test_init_job_runs_from_dagster_cli(tmp_path: Path, dagster_home: Path) -> None:
    data = tmp_path / "data"
    result = subprocess.run([DAGSTER, "job", "execute", "-m", "archive_pipelines.definitions",
                             "-j", "init_job"], cwd=ROOT, capture_output=True, text=True,
                            timeout=300, env=_env(data, dagster_home))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "RUN_SUCCESS" in result.stdout + result.stderr
    assert (data / "catalog.sqlite3").exists() and (data / "cas").is_dir()


def test_init_job_in_process_reports_metadata(
    tmp_path: Path, dagster_instance: dg.DagsterInstance
) -> None:
    from archive_pipelines.ops.init_job import init_job
    from archive_pipelines.resources import SettingsResource

    result = init_job.execute_in_process(
        resources={"settings": SettingsResource(data_dir=str(tmp_path / "d"))},
        instance=dagster_instance,
    )
    assert result.success
    [mat] = [e for e in result.all_events if e.event_type_value == "STEP_OUTPUT"]
    metadata = mat.event_specific_data.metadata  # type: ignore[union-attr]
    assert metadata["migrated"].value is True
