"""What the cluster tests read from a cluster-profile Dagster instance: runs waited for,
and the Celery workers that executed a run's steps (dagster-celery's engine events), and
whether the catalog and the stores agree afterwards."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import dagster as dg

from archive_testkit.process_groups import ProcessGroups

FINISHED = {dg.DagsterRunStatus.SUCCESS, dg.DagsterRunStatus.FAILURE,
            dg.DagsterRunStatus.CANCELED}


def wait_for_run(instance: dg.DagsterInstance, job_name: str, *, groups: ProcessGroups,
                 timeout: float = 180.0,
                 wanted: Callable[[dg.DagsterRun], bool] = lambda run: True) -> dg.DagsterRun:
    """The first finished run of `job_name` that is `wanted` (the cluster's processes checked
    alive meanwhile); an AssertionError with the daemon's log after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        groups.check_alive()
        runs = instance.get_runs(dg.RunsFilter(job_name=job_name))
        done = [run for run in runs if run.status in FINISHED and wanted(run)]
        if done:
            return done[-1]  # the oldest (newest first)
        if time.monotonic() > deadline:
            raise AssertionError(f"no finished {job_name} run in {timeout:.0f}s: "
                                 f"{[(run.run_id[:8], run.status.value) for run in runs]}\n"
                                 f"{groups.log_tail('dagster-daemon')}")
        time.sleep(1.0)


def celery_workers(instance: dg.DagsterInstance, run_id: str) -> list[str]:
    """The node names (NAME@host) of the Celery workers that executed the run's steps, one
    per step, as dagster-celery records them in the run's engine events."""
    workers = []
    for entry in instance.all_logs(run_id, of_type=dg.DagsterEventType.ENGINE_EVENT):
        event = entry.dagster_event
        metadata = event.engine_event_data.metadata if event is not None else {}
        if "Celery worker" in metadata:
            workers.append(str(metadata["Celery worker"].value))
    return workers


def step_keys(instance: dg.DagsterInstance, run_id: str) -> set[str]:
    """The steps that succeeded in the run."""
    return {str(entry.step_key) for entry in instance.all_logs(
        run_id, of_type=dg.DagsterEventType.STEP_SUCCESS)}


def wait_for_runs(instance: dg.DagsterInstance, count: int, *, groups: ProcessGroups,
                  runs_filter: dg.RunsFilter, timeout: float = 600.0) -> list[dg.DagsterRun]:
    """The runs `runs_filter` selects, once there are `count` and all have finished."""
    deadline = time.monotonic() + timeout
    while True:
        groups.check_alive()
        runs = list(instance.get_runs(runs_filter))
        if len(runs) >= count and all(run.status in FINISHED for run in runs):
            return runs
        if time.monotonic() > deadline:
            raise AssertionError(f"runs not finished in {timeout:.0f}s: "
                                 f"{[(run.run_id[:8], run.status.value) for run in runs]}\n"
                                 f"{groups.log_tail('dagster-daemon')}")
        time.sleep(1.0)


def celery_steps(instance: dg.DagsterInstance, run_id: str) -> list[tuple[str, str]]:
    """(step key, node name) for each time a Celery worker began executing one of the run's
    steps, in order (the engine event dagster-celery's task reports first)."""
    workers = []
    for entry in instance.all_logs(run_id, of_type=dg.DagsterEventType.ENGINE_EVENT):
        event = entry.dagster_event
        metadata = event.engine_event_data.metadata if event is not None else {}
        if "Celery worker" in metadata:
            workers.append((str(entry.step_key), str(metadata["Celery worker"].value)))
    return workers


def engine_events(instance: dg.DagsterInstance, run_id: str) -> list[tuple[str, list[str]]]:
    return [(entry.user_message, list(entry.dagster_event.engine_event_data.metadata))
            for entry in instance.all_logs(run_id, of_type=dg.DagsterEventType.ENGINE_EVENT)
            if entry.dagster_event is not None]


def assert_replicated_and_verified(data: Path, *, blobs: int, env: dict[str, str]) -> None:
    """`replication-status --verify` (every copy read) counts `blobs` referenced blobs, none
    under-replicated, and `verify --deep` exits 0: the catalog and the stores agree."""
    cli = [str(Path(sys.executable).parent / "archive-pipelines"), "--data-dir", str(data)]
    status = subprocess.run([*cli, "replication-status", "--verify", "--sample", "1"],
                            capture_output=True, text=True, env=env, timeout=120)
    assert status.returncode == 0, status.stdout + status.stderr
    assert f"{blobs} referenced blobs; 0 under-replicated" in status.stdout
    verify = subprocess.run([*cli, "verify", "--deep"], capture_output=True, text=True, env=env,
                            timeout=120)
    assert verify.returncode == 0, verify.stdout + verify.stderr
