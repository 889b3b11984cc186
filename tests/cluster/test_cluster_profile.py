"""The cluster profile end to end on one machine: Dagster's storage on PostgreSQL, runs queued
by the QueuedRunCoordinator and launched by dagster-daemon, their steps executed by two
dagster-celery workers over Redis, compute logs on S3 (moto).

A job backfill of `replica_copies_job` (one run per prefix) spreads over both workers; the
asset's own backfill runs a range as one run (its single-run policy), which one worker runs.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import boto3
import dagster as dg
import pytest

from archive_testkit.cluster import (
    WORKSPACE,
    celery_app,
    cluster_env,
)
from archive_testkit.process_groups import ProcessGroups
from tests.helpers.replication import replica_files

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(420)]

BIN = Path(sys.executable).parent
WORKERS = ["alpha", "beta"]


def test_a_backfill_spreads_over_two_celery_workers(
    cluster: tuple[Path, list[str], ProcessGroups], s3_endpoint_url: str, s3_bucket: str
) -> None:
    data, hashes, groups = cluster
    # Both workers run with the settings of the data dir's executor.yaml (lost work redelivered).
    app = celery_app(data)
    try:
        confs = app.control.inspect(timeout=5.0).conf() or {}
    finally:
        app.close()
    assert {node.split("@")[0] for node in confs} == set(WORKERS)
    for conf in confs.values():
        assert conf["task_acks_late"] is True and conf["task_reject_on_worker_lost"] is True
        assert conf["broker_transport_options"]["visibility_timeout"] == 300
        assert conf["broker_url"].startswith("redis://")
    prefixes = sorted({h[:2] for h in hashes})[:6]
    env = cluster_env(data)
    backfill = subprocess.run(
        [str(BIN / "dagster"), "job", "backfill", "-w", str(WORKSPACE), "-j", "replica_copies_job",
         "--partitions", ",".join(prefixes), "--noprompt"],
        capture_output=True, text=True, env=env, cwd=WORKSPACE.parent, timeout=180)
    assert backfill.returncode == 0, backfill.stdout + backfill.stderr

    with dg.DagsterInstance.from_config(str(data / "dagster")) as instance:
        assert type(instance.run_storage).__name__ == "PostgresRunStorage"
        runs = _wait_for_runs(instance, len(prefixes), groups=groups)
        assert sorted(run.tags["dagster/partition"] for run in runs) == prefixes
        assert {run.status for run in runs} == {dg.DagsterRunStatus.SUCCESS}, [
            (run.run_id, run.status) for run in runs]
        # Each run's steps (the asset, its check) were handed to Celery workers, which say so
        # in the run's events.
        hosts = {}
        for run in runs:
            workers = _celery_workers(instance, run.run_id)
            assert len(workers) == 2, _engine_events(instance, run.run_id)
            hosts[run.tags["dagster/partition"]] = workers
        assert {host.split("@")[0] for names in hosts.values() for host in names} == set(WORKERS), hosts

    # (The director's archive_batch_job runs, on by default, may have copied others too.)
    assert {f"{h}.zst" for h in hashes if h[:2] in prefixes} <= replica_files(data)
    # The steps' stdout/stderr went to S3 through dagster-aws's compute log manager.
    s3 = boto3.client("s3", endpoint_url=s3_endpoint_url, region_name="us-east-1")
    listed = s3.list_objects_v2(Bucket=s3_bucket, Prefix="compute-logs/").get("KeyCount", 0)
    assert listed > 0

    # The rest of the archive's prefixes, then the catalog and the stores agree.
    cli = [str(BIN / "archive-pipelines"), "--data-dir", str(data)]
    replicate = subprocess.run([*cli, "replicate"], capture_output=True, text=True, env=env,
                               timeout=120)
    assert replicate.returncode == 0, replicate.stdout + replicate.stderr
    status = subprocess.run([*cli, "replication-status", "--verify", "--sample", "1"],
                            capture_output=True, text=True, env=env, timeout=120)
    assert status.returncode == 0, status.stdout + status.stderr
    assert f"{len(hashes)} referenced blobs; 0 under-replicated" in status.stdout
    verify = subprocess.run([*cli, "verify", "--deep"], capture_output=True, text=True, env=env,
                            timeout=120)
    assert verify.returncode == 0, verify.stdout + verify.stderr


def _wait_for_runs(instance: dg.DagsterInstance, count: int, *, groups: ProcessGroups,
                   timeout: float = 300.0) -> list[dg.DagsterRun]:
    finished = {dg.DagsterRunStatus.SUCCESS, dg.DagsterRunStatus.FAILURE,
                dg.DagsterRunStatus.CANCELED}
    deadline = time.monotonic() + timeout
    while True:
        groups.check_alive()
        runs = list(instance.get_runs(dg.RunsFilter(job_name="replica_copies_job")))
        if len(runs) >= count and all(run.status in finished for run in runs):
            return runs
        if time.monotonic() > deadline:
            raise AssertionError(f"runs not finished in {timeout:.0f}s: "
                                 f"{[(run.run_id[:8], run.status.value) for run in runs]}\n"
                                 f"{groups.log_tail('dagster-daemon')}")
        time.sleep(1.0)


def _celery_workers(instance: dg.DagsterInstance, run_id: str) -> list[str]:
    """The node names of the Celery workers that executed the run's steps (engine events)."""
    workers = []
    for entry in instance.all_logs(run_id, of_type=dg.DagsterEventType.ENGINE_EVENT):
        event = entry.dagster_event
        metadata = event.engine_event_data.metadata if event is not None else {}
        if "Celery worker" in metadata:
            workers.append(str(metadata["Celery worker"].value))
    return workers


def _engine_events(instance: dg.DagsterInstance, run_id: str) -> list[tuple[str, list[str]]]:
    return [(entry.user_message, list(entry.dagster_event.engine_event_data.metadata))
            for entry in instance.all_logs(run_id, of_type=dg.DagsterEventType.ENGINE_EVENT)
            if entry.dagster_event is not None]
