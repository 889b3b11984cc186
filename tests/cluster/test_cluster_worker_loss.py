"""A Celery worker lost mid-backfill (kill -9 of its whole process group: a machine gone):
the backfill still completes, and no copy is lost or recorded present without being there.

What happens (this test asserts it): the lost worker held its step's task unacknowledged
(`task_acks_late`); nothing tells the run's orchestrator, which keeps waiting for the task's
result. Once the broker's visibility timeout has passed, the surviving worker's next sweep puts
the task back on the queue and runs the step again, from its start, and the run succeeds:
Dagster never sees a failure, so `run_retries` is not involved (it is for a lost run process).
Running the step again is safe because a copy is recorded present only after it was written
and verified.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import dagster as dg
import pytest
from dagster._grpc.types import ExecuteStepArgs
from dagster._serdes import unpack_value

from archive_pipelines.replication import ReplicaSet
from archive_pipelines.settings import load_settings
from archive_pipelines.storage.assembly import open_storage
from archive_testkit.cluster import WORKSPACE, celery_app, cluster_env
from archive_testkit.process_groups import ProcessGroups
from tests.helpers.cluster_runs import assert_replicated_and_verified, celery_steps, wait_for_runs
from tests.helpers.cluster_setup import ClusterOptions
from tests.helpers.replication import statuses

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(900)]

BIN = Path(sys.executable).parent
WORKERS = ["alpha", "beta"]
# Seconds: longer than any step here (a worker's first step imports the code), short for the
# test's sake.
VISIBILITY_TIMEOUT = 20
REPLICA = "replica1"


@pytest.fixture
def cluster_options() -> ClusterOptions:
    # The director stopped: its runs would copy what the backfill's runs must copy, and hide
    # a lost step's copies.
    # 12 prefixes of 10 blobs each (copied in batches of 2): each step copies for a while.
    return ClusterOptions(visibility_timeout=VISIBILITY_TIMEOUT, blobs=120, prefixes=12,
                          blob_bytes=20_000, stopped_sensors=("archival_director_sensor",))


def test_a_backfill_survives_the_loss_of_a_worker_mid_step(
    cluster: tuple[Path, list[str], ProcessGroups],
) -> None:
    data, hashes, groups = cluster
    prefixes = sorted({h[:2] for h in hashes})  # every prefix holding a blob: all copied here
    assert len(prefixes) == 12 and len(hashes) == 120
    env = cluster_env(data)
    backfill = subprocess.run(
        [str(BIN / "dagster"), "job", "backfill", "-w", str(WORKSPACE), "-j", "replica_copies_job",
         "--partitions", ",".join(prefixes), "--noprompt"],
        capture_output=True, text=True, env=env, cwd=WORKSPACE.parent, timeout=180)
    assert backfill.returncode == 0, backfill.stdout + backfill.stderr

    jobs = dg.RunsFilter(job_name="replica_copies_job")
    app = celery_app(data)
    try:
        with dg.DagsterInstance.from_config(str(data / "dagster")) as instance:
            nodes = _nodes(app)
            assert [node.split("@")[0] for node in nodes] == WORKERS
            killed_node, task = _kill_a_worker_mid_step(app, instance, nodes=nodes, groups=groups)
            # The task had not finished when its worker went: unacknowledged (acks_late), no
            # result ever stored.
            assert task["acknowledged"] is False
            assert app.AsyncResult(task["id"]).state == "PENDING"
            runs = wait_for_runs(instance, len(prefixes), groups=groups, runs_filter=jobs,
                                 timeout=600)
            assert sorted(run.tags["dagster/partition"] for run in runs) == prefixes
            assert {run.status for run in runs} == {dg.DagsterRunStatus.SUCCESS}, [
                (run.run_id[:8], run.tags["dagster/partition"], run.status) for run in runs]
            # No run was retried (each prefix ran once): the orchestrator never saw a failure.
            assert not [run for run in runs if "dagster/parent_run_id" in run.tags]
            # The lost step began on the killed worker, then ran again on the survivor.
            args = _step_args(task)
            executed = [node for step, node in celery_steps(instance, args.run_id)
                        if step in args.step_keys_to_execute]  # type: ignore[operator]
            [survivor] = [node for node in nodes if node != killed_node]
            assert executed == [killed_node, survivor], executed
    finally:
        app.close()

    # Every copy the catalog records present is there, intact; every blob has its copies.
    storage = open_storage(load_settings(data, environ={}))
    try:
        copies = statuses(storage)
        replicas = ReplicaSet.open(storage.catalog, storage.settings)
        for (store, digest), status in copies.items():
            if status == "present":
                result = replicas[store].require().check(digest)
                assert result.ok, f"{store}: {digest} recorded present but {result.status}"
        assert {h for (store, h), s in copies.items() if store == REPLICA and s == "present"} == set(hashes)
    finally:
        storage.close()
        storage.catalog.engine.dispose()
    assert_replicated_and_verified(data, blobs=len(hashes), env=env)


def _kill_a_worker_mid_step(app: Any, instance: dg.DagsterInstance, *, nodes: list[str],
                            groups: ProcessGroups, timeout: float = 400.0,
                            ) -> tuple[str, dict[str, Any]]:
    """Once two of the backfill's runs have finished, SIGKILL the worker that is running a
    `replica_copies` step (the step that copies); its node name and the task it held. The
    worker is frozen (SIGSTOP) first and killed only if its step has still not ended: a step
    can end between the worker's answer and the kill (CI, 2026-11-28: the task's result was
    stored), and then the loss this test is about would not happen."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        groups.check_alive()
        done = instance.get_runs_count(dg.RunsFilter(job_name="replica_copies_job",
                                                     statuses=[dg.DagsterRunStatus.SUCCESS]))
        active = app.control.inspect(destination=nodes, timeout=1.0).active() or {} if done >= 2 else {}
        for node, tasks in active.items():
            for task in tasks:
                args = _step_args(task)
                # The step has begun in that worker (its engine event is written first).
                if ("replica_copies" in (args.step_keys_to_execute or [])
                        and ("replica_copies", node) in celery_steps(instance, args.run_id)):
                    worker = f"worker-{node.split('@')[0]}"
                    groups.pause(worker)
                    time.sleep(0.5)  # what it sent before it froze is stored
                    if (app.AsyncResult(task["id"]).state == "PENDING"
                            and not _step_ended(instance, args.run_id, "replica_copies")):
                        groups.kill(worker)
                        return node, task
                    groups.resume(worker)
        time.sleep(0.1)
    raise AssertionError(f"no worker began a replica_copies step in {timeout:.0f}s")


def _step_ended(instance: dg.DagsterInstance, run_id: str, step: str) -> bool:
    ends = {dg.DagsterEventType.STEP_SUCCESS, dg.DagsterEventType.STEP_FAILURE}
    return any(entry.step_key == step for entry in instance.all_logs(run_id, of_type=ends))


def _step_args(task: dict[str, Any]) -> ExecuteStepArgs:
    return unpack_value(task["kwargs"]["execute_step_args_packed"], as_type=ExecuteStepArgs)


def _nodes(app: Any) -> list[str]:
    return sorted(node for reply in app.control.ping(timeout=1.0) or [] for node in reply)
