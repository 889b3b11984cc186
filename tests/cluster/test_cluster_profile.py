"""The cluster profile end to end on one machine: Dagster's storage on PostgreSQL, runs queued
by the QueuedRunCoordinator and launched by dagster-daemon, their steps executed by two
dagster-celery workers over Redis, compute logs on S3 (moto).

Two backfills at once spread over both workers: a job backfill of `replica_copies_job` (one
run per prefix; the asset's own backfill runs 8 prefixes per run) and an asset backfill of
`blobs` over several snapshot days (one run per day).
"""

from __future__ import annotations

import itertools
import subprocess
import sys
import time
import uuid
from pathlib import Path

import boto3
import dagster as dg
import pytest
from dagster._core.execution.backfill import BulkActionStatus, PartitionBackfill
from dagster._utils.warnings import disable_dagster_warnings

from archive_pipelines.definitions import defs
from archive_pipelines.settings import load_settings
from archive_pipelines.storage.assembly import open_storage
from archive_testkit.cluster import WORKSPACE, celery_app, cluster_env
from archive_testkit.process_groups import ProcessGroups
from tests.helpers.cluster_runs import (
    assert_replicated_and_verified,
    celery_steps,
    engine_events,
    wait_for_runs,
)
from tests.helpers.cluster_setup import ClusterOptions
from tests.helpers.replication import replica_files

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(900)]

BIN = Path(sys.executable).parent
WORKERS = ["alpha", "beta"]
PREFIXES = 16
DAYS = ("2025-01-01", "2025-01-02", "2025-01-03")


@pytest.fixture
def cluster_options() -> ClusterOptions:
    # The director stopped: its first tick would launch a run per batch of 2 blobs, copying
    # what the backfill's runs are to copy, and queue them before the backfills' runs.
    return ClusterOptions(legacy_days=DAYS, stopped_sensors=("archival_director_sensor",))


def test_two_backfills_spread_over_two_celery_workers(
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
    prefixes = sorted({h[:2] for h in hashes})[:PREFIXES]
    assert len(prefixes) == PREFIXES  # the fixture's blobs hold this many prefixes at least
    env = cluster_env(data)
    with subprocess.Popen(
        [str(BIN / "dagster"), "job", "backfill", "-w", str(WORKSPACE), "-j", "replica_copies_job",
         "--partitions", ",".join(prefixes), "--noprompt"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
        cwd=WORKSPACE.parent,
    ) as job_backfill, dg.DagsterInstance.from_config(str(data / "dagster")) as instance:
        assert type(instance.run_storage).__name__ == "PostgresRunStorage"
        blobs_backfill = _launch_blobs_backfill(instance, DAYS)
        said = job_backfill.communicate(timeout=180)[0]
        assert job_backfill.returncode == 0, said

        replica_runs = wait_for_runs(instance, PREFIXES, groups=groups,
                                     runs_filter=dg.RunsFilter(job_name="replica_copies_job"))
        blob_runs = wait_for_runs(instance, len(DAYS), groups=groups,
                                  runs_filter=dg.RunsFilter(tags={"dagster/backfill": blobs_backfill}))
        assert sorted(run.tags["dagster/partition"] for run in replica_runs) == prefixes
        assert sorted(run.tags["dagster/partition"] for run in blob_runs) == list(DAYS)
        runs = replica_runs + blob_runs
        assert {run.status for run in runs} == {dg.DagsterRunStatus.SUCCESS}, [
            (run.run_id, run.status) for run in runs]
        _wait_for_backfill(instance, blobs_backfill, groups=groups)

        # Each run's steps (an asset, its checks) were handed to Celery workers, which say so
        # in the run's events; between them the runs used both workers.
        hosts: dict[str, list[str]] = {}
        for run in runs:
            workers = celery_steps(instance, run.run_id)
            steps = [step for step, _ in workers]
            assert len(steps) >= 2 and len(set(steps)) == len(steps), engine_events(
                instance, run.run_id)
            hosts[run.tags["dagster/partition"]] = [node for _, node in workers]
        assert {node.split("@")[0] for nodes in hosts.values() for node in nodes} == set(WORKERS), hosts

        # Each day's run stored the files of its legacy folders. The blob_store pool (limit 1,
        # cluster-wide: its claims are rows in PostgreSQL) ran the days' `blobs` steps one
        # at a time whichever worker took them: by design, so gc never runs beside a writer.
        stored = {}
        for record in instance.fetch_materializations(dg.AssetKey("blobs"), limit=10).records:
            materialization = record.asset_materialization
            assert materialization is not None
            stored[materialization.partition] = materialization.metadata["run_ingested_files"].value
        assert stored == dict.fromkeys(DAYS, 6), stored
        spans = sorted(_step_span(instance, run.run_id, "blobs") for run in blob_runs)
        assert all(earlier[1] <= later[0] for earlier, later in itertools.pairwise(spans)), spans

    # The backfill copied its prefixes' blobs, and only those (the director is off; a day's
    # new blob may have been in time for its prefix's run).
    copied = replica_files(data)
    assert {f"{h}.zst" for h in hashes if h[:2] in prefixes} <= copied
    assert {name[:2] for name in copied} == set(prefixes)
    # The steps' stdout/stderr went to S3 through dagster-aws's compute log manager.
    s3 = boto3.client("s3", endpoint_url=s3_endpoint_url, region_name="us-east-1")
    listed = s3.list_objects_v2(Bucket=s3_bucket, Prefix="compute-logs/").get("KeyCount", 0)
    assert listed > 0

    # The rest of the archive's prefixes, then the catalog and the stores agree.
    stored_hashes = _primary_hashes(data)
    assert set(hashes) < stored_hashes  # the days' files were new blobs
    cli = [str(BIN / "archive-pipelines"), "--data-dir", str(data)]
    replicate = subprocess.run([*cli, "replicate"], capture_output=True, text=True, env=env,
                               timeout=120)
    assert replicate.returncode == 0, replicate.stdout + replicate.stderr
    assert_replicated_and_verified(data, blobs=len(stored_hashes), env=env)


def _launch_blobs_backfill(instance: dg.DagsterInstance, days: tuple[str, ...]) -> str:
    """An asset backfill of `blobs` over `days`, as Dagit's "Materialize" of a partition range
    makes it (GraphQL's launchPartitionBackfill adds the same record); dagster-daemon's
    backfill daemon launches its runs, one per day (`blobs` has no single-run policy)."""
    instance.add_dynamic_partitions("snapshot_days", list(days))  # what days_sensor does
    backfill_id = uuid.uuid4().hex[:8]
    with disable_dagster_warnings():  # Dagster's own use of a deprecated AssetSelection
        backfill = PartitionBackfill.from_asset_partitions(
            backfill_id=backfill_id, asset_graph=defs.resolve_asset_graph(),
            partition_names=list(days), asset_selection=[dg.AssetKey("blobs")],
            backfill_timestamp=time.time(), tags={}, dynamic_partitions_store=instance,
            all_partitions=False, title="blobs of three days", description=None,
            run_config=None)
    instance.add_backfill(backfill)
    return backfill_id


def _wait_for_backfill(instance: dg.DagsterInstance, backfill_id: str, *, groups: ProcessGroups,
                       timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while True:
        backfill = instance.get_backfill(backfill_id)
        assert backfill is not None
        if backfill.status == BulkActionStatus.COMPLETED_SUCCESS:
            return
        assert backfill.status in (BulkActionStatus.REQUESTED,
                                   BulkActionStatus.COMPLETED), backfill.status
        if time.monotonic() > deadline:
            raise AssertionError(f"backfill {backfill_id} is {backfill.status} after "
                                 f"{timeout:.0f}s\n{groups.log_tail('dagster-daemon')}")
        groups.check_alive()
        time.sleep(1.0)


def _step_span(instance: dg.DagsterInstance, run_id: str, step_key: str) -> tuple[float, float]:
    """When the step started and succeeded (the events its worker wrote)."""
    times = {}
    for kind in (dg.DagsterEventType.STEP_START, dg.DagsterEventType.STEP_SUCCESS):
        [entry] = [e for e in instance.all_logs(run_id, of_type=kind) if e.step_key == step_key]
        times[kind] = entry.timestamp
    return times[dg.DagsterEventType.STEP_START], times[dg.DagsterEventType.STEP_SUCCESS]


def _primary_hashes(data: Path) -> set[str]:
    storage = open_storage(load_settings(data, environ={}))
    try:
        return set(storage.primary.store.iter_hashes())
    finally:
        storage.close()
        storage.catalog.engine.dispose()
