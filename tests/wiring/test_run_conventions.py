"""What Dagster users expect of the code location: runs tagged with who launched them, gc
kept apart from the runs that write blobs (the blob_store pool of init's dagster.yaml),
checks that block what they guard, freshness policies, code references, neutral kinds, and
failed runs recorded in the data dir."""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime
from pathlib import Path

import dagster as dg
import pytest
from dagster._core.definitions.instigation_logger import get_instigation_log_records

from archive_pipelines.datadir import DataDir, initialize
from archive_pipelines.datadir.run_failures import read_run_failures
from archive_pipelines.definitions import defs
from archive_pipelines.ops.storage_jobs import gc_job, verify_storage_job
from archive_pipelines.resources import CatalogResource, SettingsResource, StorageResource
from archive_pipelines.run_labels import BLOB_STORE_POOL, LAUNCHED_BY
from archive_pipelines.sensors.director import archival_director_sensor
from archive_pipelines.sensors.migration import orphan_import_sensor
from archive_pipelines.sensors.run_failures import run_failure_sensor
from archive_pipelines.sensors.schedules import scrub_schedule, verify_storage_schedule
from archive_pipelines.settings import load_settings
from tests.helpers.replication import replicated_data_dir, replication_resources


def _resources(data: Path) -> dict[str, object]:
    settings = SettingsResource(data_dir=str(data))
    return {"settings": settings, "storage": StorageResource(catalog=CatalogResource(settings=settings))}


def _initialized(tmp_path: Path) -> Path:
    data = tmp_path / "data"
    initialize(load_settings(data, environ={}))
    return data


@pytest.mark.parametrize("schedule", [verify_storage_schedule, scrub_schedule])
def test_a_scheduled_run_is_tagged_and_the_decision_logged(
    schedule: dg.ScheduleDefinition, tmp_path: Path, dagster_instance: dg.DagsterInstance,
    capfd: pytest.CaptureFixture[str],
) -> None:
    with dg.build_schedule_context(
            instance=dagster_instance,
            resources={"settings": SettingsResource(data_dir=str(tmp_path))},
            scheduled_execution_time=datetime(2025, 1, 1, tzinfo=UTC)) as context:
        request = schedule(context)
    assert isinstance(request, dg.RunRequest)
    assert request.tags[LAUNCHED_BY] == f"schedule:{schedule.name}"
    # The evaluation's log (a test context has no tick to keep it: Dagster prints it).
    assert "due (every " in capfd.readouterr().err


def test_sensor_runs_are_tagged_and_a_skip_is_logged(
    tmp_path: Path, dagster_instance: dg.DagsterInstance,
) -> None:
    data, _hashes = replicated_data_dir(tmp_path)
    with dg.build_sensor_context(instance=dagster_instance,
                                 resources=replication_resources(data)) as context:
        result = archival_director_sensor(context)
    assert isinstance(result, dg.SensorResult) and result.run_requests
    assert {r.tags[LAUNCHED_BY] for r in result.run_requests} == {
        "sensor:archival_director_sensor"}

    (data / "archive" / "1735128000.1").mkdir(parents=True)  # a new folder under archive/
    with dg.build_sensor_context(instance=dagster_instance, resources=_resources(data)) as context:
        noticed = orphan_import_sensor(context)
    assert isinstance(noticed, dg.SensorResult)
    [request] = noticed.run_requests or []
    assert request.tags[LAUNCHED_BY] == "sensor:orphan_import_sensor"
    # The tick's log, kept where Dagit's "View logs" on a tick reads it.
    with dg.build_sensor_context(instance=dagster_instance, cursor=noticed.cursor,
                                 instance_ref=dagster_instance.get_ref(),
                                 resources=_resources(data), repository_name="__repository__",
                                 sensor_name=orphan_import_sensor.name) as context:
        quiet = orphan_import_sensor(context)
        log_key = context.log_key
    assert isinstance(quiet, dg.SensorResult) and not quiet.run_requests
    assert log_key is not None
    records = get_instigation_log_records(dagster_instance, log_key)
    assert [(r["levelname"], r["msg"].split(" - ")[-1]) for r in records] == [
        ("INFO", "archive/ unchanged since the last import (its mtime)")]


@pytest.mark.unit
def test_gc_and_every_step_that_writes_blobs_share_the_blob_store_pool() -> None:
    repo = defs.get_repository_def()
    writers = {"snapshots", "blobs", "captures"}
    for key in repo.asset_graph.get_all_asset_keys():
        assets_def = repo.asset_graph.assets_def_for_key(key)
        if assets_def.is_executable:
            pool = assets_def.node_def.pool
            assert (pool == BLOB_STORE_POOL) == (key.to_user_string() in writers), key
    ops = {op.name: op.pool for job in repo.get_all_jobs() for op in job.all_node_defs}
    for name in ("gc_op", "migrate_fs_op", "migrate_to_cas_op", "import_orphans_op",
                 "merge_duplicates_op", "import_warc_op"):
        assert ops[name] == BLOB_STORE_POOL, name
    for name in ("verify_storage_op", "rebuild_views_op", "scrub_op", "archive_batch_op"):
        assert ops[name] is None, name


def test_gc_waits_while_a_writing_step_holds_the_pool(tmp_path: Path) -> None:
    """On the instance `init` configures (its dagster.yaml): a queued gc run is held back by
    the queue while a writer holds the pool, and a gc run started anyway (`dagster job
    execute`) waits for the slot before it reads anything."""
    from dagster._core.op_concurrency_limits_counter import GlobalOpConcurrencyLimitsCounter

    data = _initialized(tmp_path)
    with dg.DagsterInstance.from_config(str(DataDir(data).dagster_home)) as instance:
        assert instance.get_settings("freshness") == {"enabled": True}
        storage = instance.event_log_storage
        storage.initialize_concurrency_limit_to_default(BLOB_STORE_POOL)
        assert storage.get_concurrency_info(BLOB_STORE_POOL).slot_count == 1
        # A writing run's step (a blobs materialization) holds the pool.
        claim = storage.claim_concurrency_slot(BLOB_STORE_POOL, "writing-run", "blobs")
        assert claim.is_claimed

        queued = instance.create_run_for_job(gc_job)  # as the launchpad submits it
        assert queued.run_op_concurrency is not None
        assert queued.run_op_concurrency.root_key_counts == {BLOB_STORE_POOL: 1}

        def queue_holds_back_gc() -> bool:  # the run queue daemon's own decision
            counter = GlobalOpConcurrencyLimitsCounter(
                instance, [queued], [], concurrency_keys=storage.get_concurrency_keys(),
                pool_limits=storage.get_pool_limits())
            return counter.is_blocked(queued)

        assert queue_holds_back_gc()
        storage.free_concurrency_slot_for_step("writing-run", "blobs")
        assert not queue_holds_back_gc()  # the writer done: the queue lets gc go

        # `dagster job execute gc_job` while a writer holds the pool: the step waits.
        assert storage.claim_concurrency_slot(BLOB_STORE_POOL, "writing-run", "blobs").is_claimed
        outcome: dict[str, dg.ExecuteInProcessResult] = {}
        gc = threading.Thread(target=lambda: outcome.setdefault("run", gc_job.execute_in_process(
            instance=instance, resources=_resources(data),
            run_config={"ops": {"gc_op": {"config": {"dry_run": True}}}})))
        gc.start()
        time.sleep(3)
        assert gc.is_alive(), "gc ran while a writing step held the pool"
        released = time.time()
        storage.free_concurrency_slot_for_step("writing-run", "blobs")
        gc.join(timeout=60)
        run = outcome["run"]
        assert run.success
        entries = instance.all_logs(run.run_id)
        assert any(f"blocked by limit for pool {BLOB_STORE_POOL}" in e.user_message
                   for e in entries)
        [summary] = [e for e in entries if e.user_message.startswith("dry run, nothing changed")]
        assert summary.timestamp >= released


@pytest.mark.unit
def test_checks_block_what_they_guard_with_their_severity() -> None:
    repo = defs.get_repository_def()
    blocking = {key.name: repo.asset_graph.get(key).blocking
                for key in repo.asset_graph.asset_check_keys}
    assert blocking == {"captures_complete": True, "blob_files_present": True,
                        "ref_counts_exact": False, "view_links_healthy": False,
                        "replication_policy_met": False, "crawl_taken": False,
                        "capture_qa": False}


def test_a_failed_blocking_check_stops_the_views_of_the_run(
    tmp_path: Path, dagster_instance: dg.DagsterInstance,
) -> None:
    from archive_pipelines.assets.storage import blobs, storage_health, views
    from tests.helpers.storage import add_snapshot, write_tree

    data = _initialized(tmp_path)
    settings = load_settings(data, environ={})
    from archive_pipelines.storage.assembly import open_storage
    from archive_pipelines.storage.file_ingest import ingest_directory

    parts = open_storage(settings)
    sid = add_snapshot(parts)
    ingest_directory(parts.catalog, parts.primary, parts.views, work=parts.work, snapshot_id=sid,
                     extractor="wget", directory=write_tree(tmp_path / "src", {"a": b"a" * 10}))
    [blob] = list(parts.primary.store.iter_hashes())
    parts.primary.store.local_path(blob).unlink()  # a referenced blob's file lost
    (data / "archive" / "by_date" / "2020" / "orphan").parent.mkdir(parents=True)
    (data / "archive" / "by_date" / "2020" / "orphan").symlink_to("nowhere")
    parts.close()
    parts.catalog.engine.dispose()
    dagster_instance.add_dynamic_partitions("snapshot_days", ["2024-12-25"])
    result = dg.materialize([blobs, views, storage_health], partition_key="2024-12-25",
                            resources=_resources(data), instance=dagster_instance,
                            raise_on_error=False)
    checks = {c.check_name: c for c in result.get_asset_check_evaluations()}
    assert not checks["blob_files_present"].passed
    assert checks["blob_files_present"].severity == dg.AssetCheckSeverity.ERROR
    assert not result.success
    assert not result.asset_materializations_for_node("views")  # blocked: not materialized
    assert result.asset_materializations_for_node("blobs")


def test_a_warning_check_does_not_block(tmp_path: Path,
                                        dagster_instance: dg.DagsterInstance) -> None:
    from archive_pipelines.assets.storage import storage_health, views

    data = _initialized(tmp_path)
    orphan = data / "archive" / "by_date" / "20200101" / "x.test" / "id" / "wget" / "f"
    orphan.parent.mkdir(parents=True)
    orphan.symlink_to("nowhere")
    dagster_instance.add_dynamic_partitions("snapshot_days", ["2024-12-25"])
    result = dg.materialize([views, storage_health], partition_key="2024-12-25",
                            resources=_resources(data), instance=dagster_instance,
                            raise_on_error=False)
    [check] = [c for c in result.get_asset_check_evaluations()
               if c.check_name == "view_links_healthy"]
    assert not check.passed and check.severity == dg.AssetCheckSeverity.WARN
    assert result.success


@pytest.mark.unit
def test_freshness_kinds_owners_and_code_references() -> None:
    repo = defs.get_repository_def()
    graph = repo.asset_graph
    fresh = {key.to_user_string(): type(graph.get(key).freshness_policy).__name__
             for key in graph.get_all_asset_keys() if graph.get(key).freshness_policy}
    assert fresh == dict.fromkeys(("crawl_segments", "captures", "replica_copies"),
                                  "TimeWindowFreshnessPolicy")
    for key in graph.get_all_asset_keys():
        node = graph.get(key)
        # Kinds true whatever the environment: the catalog may be SQLite or PostgreSQL, a
        # replica local or S3, so neither is named.
        assert "python" in node.kinds and node.kinds <= {"python", "filesystem"}, key
        assert node.owners == ["team:archive-operators"], key
        references = node.metadata["dagster/code_references"].code_references
        labels = [ref.label for ref in references if ref.label]
        assert any(label.startswith("archive_pipelines.") for label in labels), key
        assert all(Path(ref.file_path).exists() for ref in references), key


def test_the_failure_sensor_records_a_failed_run(tmp_path: Path,
                                                 dagster_instance: dg.DagsterInstance) -> None:
    data = _initialized(tmp_path)
    failed = verify_storage_job.execute_in_process(
        resources=_resources(data), instance=dagster_instance, raise_on_error=False,
        tags={LAUNCHED_BY: "cli"},
        run_config={"ops": {"verify_storage_op": {"config": {"views": ["nope"]}}}})
    assert not failed.success
    [event] = [e for e in failed.all_events if e.event_type == dg.DagsterEventType.RUN_FAILURE]
    run = dagster_instance.get_run_by_id(failed.run_id)
    assert run is not None
    context = dg.build_run_status_sensor_context(
        sensor_name="run_failure_sensor", dagster_event=event, dagster_instance=dagster_instance,
        dagster_run=run, resources={"settings": SettingsResource(data_dir=str(data))},
    ).for_run_failure()
    run_failure_sensor(context)
    [recorded] = read_run_failures(DataDir(data).logs)
    assert recorded.run_id == failed.run_id and recorded.job_name == "verify_storage_job"
    assert recorded.launched_by == "cli"
    assert "verify_storage_op" in recorded.message
    assert recorded.failed_at.tzinfo is not None
