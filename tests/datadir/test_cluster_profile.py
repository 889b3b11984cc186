"""`init --profile cluster`'s files: what they say, what is refused, and the executor choice."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from archive_pipelines.archive_error import DataDirError
from archive_pipelines.datadir.cluster_profile import (
    ClusterProfile,
    ExecutorChoice,
    read_executor_choice,
    write_cluster_files,
)

pytestmark = pytest.mark.unit

PROFILE = ClusterProfile(instance_db="postgresql://dagster:secret@db:5432/dagster",
                         broker="redis://redis:6379/1", compute_logs="s3://logs-bucket/dagster/steps",
                         s3_endpoint="http://minio:9000", visibility_timeout=900)


def test_the_instance_is_on_postgresql_with_s3_compute_logs() -> None:
    instance = yaml.safe_load(PROFILE.check().dagster_yaml())
    assert instance["storage"] == {"postgres": {
        "postgres_url": "postgresql+psycopg2://dagster:secret@db:5432/dagster"}}
    assert instance["run_coordinator"]["class"] == "QueuedRunCoordinator"
    assert instance["concurrency"] == {"runs": {"max_concurrent_runs": 8},
                                       "pools": {"default_limit": 1}}
    assert instance["compute_logs"]["class"] == "S3ComputeLogManager"
    assert instance["compute_logs"]["config"] == {"bucket": "logs-bucket", "prefix": "dagster/steps",
                                                  "endpoint_url": "http://minio:9000"}
    assert instance["run_monitoring"]["enabled"] is True


def test_celery_uses_redis_and_redelivers_a_lost_workers_steps(tmp_path: Path) -> None:
    write_cluster_files(tmp_path, PROFILE.check(), replace=False)
    choice = read_executor_choice(tmp_path)
    assert choice.kind == "celery"
    assert choice.celery["broker"] == choice.celery["backend"] == "redis://redis:6379/1"
    source = choice.celery["config_source"]
    assert source["task_acks_late"] is True and source["task_reject_on_worker_lost"] is True
    assert source["broker_transport_options"]["visibility_timeout"] == 900
    # Live workers sweep for lost tasks every 10 s (kombu's default: ~100 s), every 1 s when
    # the visibility timeout is short.
    assert source["broker_transport_options"]["unacked_restore_interval"] == 10
    assert source["broker_transport_options"]["unacked_restore_throttle"] == 1
    short = ClusterProfile(instance_db=PROFILE.instance_db, broker=PROFILE.broker,
                           compute_logs=PROFILE.compute_logs, visibility_timeout=15)
    assert short.check().celery_config()["config_source"]["broker_transport_options"][
        "unacked_restore_interval"] == 1


def test_without_an_executor_file_steps_run_in_subprocesses(tmp_path: Path) -> None:
    assert read_executor_choice(tmp_path) == ExecutorChoice(kind="multiprocess")
    (tmp_path / "executor.yaml").write_text("executor: multiprocess\n")
    assert read_executor_choice(tmp_path).kind == "multiprocess"


@pytest.mark.parametrize(("text", "said"), [
    ("executor: kubernetes\n", "`executor` must be one of multiprocess, celery"),
    ("executor: celery\n", "needs `execution: config: broker:`"),
    ("executor: [celery\n", "not valid YAML"),
])
def test_a_bad_executor_file_is_named(tmp_path: Path, text: str, said: str) -> None:
    (tmp_path / "executor.yaml").write_text(text)
    with pytest.raises(DataDirError, match=r"executor\.yaml") as caught:
        read_executor_choice(tmp_path)
    assert said in str(caught.value)


@pytest.mark.parametrize(("change", "said"), [
    ({"instance_db": "sqlite:///dagster.db"}, "--instance-db"),
    ({"broker": "amqp://guest@rabbit//"}, "--broker"),
    ({"compute_logs": "/var/log/dagster"}, "--compute-logs"),
    ({"s3_endpoint": "minio:9000"}, "--s3-endpoint"),
    ({"max_concurrent_runs": 0}, "--max-concurrent-runs"),
    ({"visibility_timeout": 1}, "--visibility-timeout"),
])
def test_a_bad_option_is_named(change: dict[str, object], said: str) -> None:
    fields = {**PROFILE.__dict__, **change}
    with pytest.raises(DataDirError, match=said):
        ClusterProfile(**fields).check()


def test_existing_files_are_kept_unless_replaced(tmp_path: Path) -> None:
    (tmp_path / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    with pytest.raises(DataDirError, match="--replace"):
        write_cluster_files(tmp_path, PROFILE.check(), replace=False)
    assert not (tmp_path / "executor.yaml").exists()  # nothing half-written
    assert write_cluster_files(tmp_path, PROFILE.check(), replace=True) == ["dagster.yaml",
                                                                            "executor.yaml"]
    assert write_cluster_files(tmp_path, PROFILE.check(), replace=False) == []  # same: kept
