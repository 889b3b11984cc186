"""The code location's executor: Dagster's default unless the deployment's executor.yaml
(DAGSTER_HOME, `init --profile cluster`) says celery, read when each run starts."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import dagster as dg
import pytest
from dagster._core.executor.in_process import InProcessExecutor
from dagster._core.executor.init import InitExecutorContext
from dagster._core.executor.multiprocess import MultiprocessExecutor
from dagster_celery.executor import CeleryExecutor

from archive_pipelines.datadir.cluster_profile import ClusterProfile, write_cluster_files
from archive_pipelines.definitions import defs
from archive_pipelines.executors import archive_executor

PROFILE = ClusterProfile(instance_db="postgresql://db/dagster", broker="redis://redis:6379/1",
                         compute_logs="s3://logs/dagster")


@pytest.fixture
def home(tmp_path: Path) -> Iterator[tuple[Path, dg.DagsterInstance]]:
    with dg.instance_for_test(temp_dir=str(tmp_path)) as instance:
        yield tmp_path, instance


def _executor(instance: dg.DagsterInstance, config: dict[str, object]) -> dg.Executor:
    job = dg.reconstructable(_a_job)
    context = InitExecutorContext(job=job, executor_def=archive_executor,
                                  executor_config=config, instance=instance)
    return archive_executor.executor_creation_fn(context)  # type: ignore[misc]


@dg.job
def _a_job_def() -> None:
    pass


def _a_job() -> dg.JobDefinition:
    return _a_job_def


def test_every_job_of_the_location_takes_the_archive_executor() -> None:
    assert defs.resolve_job_def("gc_job").executor_def is archive_executor
    assert defs.resolve_job_def("replica_copies_job").executor_def is archive_executor


def test_without_executor_yaml_it_is_dagsters_default(home: tuple[Path, dg.DagsterInstance]) -> None:
    _, instance = home
    executor = _executor(instance, {"multiprocess": {"max_concurrent": 3, "retries": {"enabled": {}}}})
    assert isinstance(executor, MultiprocessExecutor)
    assert executor._max_concurrent == 3


def test_the_cluster_profile_sends_steps_to_celery(home: tuple[Path, dg.DagsterInstance]) -> None:
    root, instance = home
    write_cluster_files(root, PROFILE.check(), replace=True)
    executor = _executor(instance, {"multiprocess": {"retries": {"enabled": {}}}})
    assert isinstance(executor, CeleryExecutor)
    assert executor.broker == executor.backend == "redis://redis:6379/1"
    assert vars(executor.config_source)["task_acks_late"] is True
    # A run that asks for in_process still runs in its own process.
    assert isinstance(_executor(instance, {"in_process": {"retries": {"enabled": {}}}}), InProcessExecutor)
