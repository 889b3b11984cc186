"""Replication wiring: the partitioned asset and its check, the director sensor, the jobs."""

from pathlib import Path

import dagster as dg

from archive_pipelines.assets.replication import replica_copies, replication_policy_met
from archive_pipelines.ops.replication_jobs import archive_batch_job, archive_director_job, scrub_job
from archive_pipelines.sensors.director import archival_director_sensor
from tests.helpers.replication import replica_files, replicated_data_dir, replication_resources
from tests.helpers.run_logs import log_lines


def test_materializing_every_prefix_reaches_the_policy(
    tmp_path: Path, dagster_instance: dg.DagsterInstance
) -> None:
    data, hashes = replicated_data_dir(tmp_path)
    prefixes = sorted({h[:2] for h in hashes})
    instance = dagster_instance
    for prefix in prefixes:
        result = dg.materialize([replica_copies, replication_policy_met], partition_key=prefix,
                                resources=replication_resources(data), instance=instance)
        assert result.success
        said = log_lines(instance, result.run_id)
        assert any(line.startswith(f"prefix {prefix}: ") and "blobs checked; policy met" in line
                   for line in said), said
        assert any(line.startswith("replica1  ") and " made, " in line for line in said), said
    assert replica_files(data) == {f"{h}.zst" for h in hashes}
    [check] = result.get_asset_check_evaluations()
    assert check.passed
    assert [dict(r.data) for r in check.metadata["copies_per_store"].value.records] == [
        {"store": "primary", "missing": 0, "ongoing": 0, "present": 5, "corrupted": 0},
        {"store": "replica1", "missing": 0, "ongoing": 0, "present": 5, "corrupted": 0}]


def test_a_range_of_prefixes_is_one_run(tmp_path: Path, dagster_instance: dg.DagsterInstance) -> None:
    """What a backfill of all 256 partitions launches (the asset's single-run backfill policy)."""
    data, hashes = replicated_data_dir(tmp_path)
    low = min(h[:2] for h in hashes)
    result = dg.materialize([replica_copies], resources=replication_resources(data),
                            instance=dagster_instance,
                            tags={"dagster/asset_partition_range_start": low,
                                  "dagster/asset_partition_range_end": low})
    assert result.success and replica_files(data) == {f"{h}.zst" for h in hashes if h[:2] == low}
    result = dg.materialize([replica_copies], resources=replication_resources(data),
                            instance=dagster_instance,
                            tags={"dagster/asset_partition_range_start": "00",
                                  "dagster/asset_partition_range_end": "ff"})
    assert result.success
    assert replica_files(data) == {f"{h}.zst" for h in hashes}
    events = result.get_asset_materialization_events()
    assert len({e.partition for e in events}) == 256  # every prefix recorded materialized
    assert replica_copies.backfill_policy == dg.BackfillPolicy.single_run()
    [summary] = {str(e.materialization.metadata["summary"].value) for e in events}
    assert summary.startswith(f"{len(hashes)} blobs of prefix 00..ff checked")


def test_director_sensor_launches_one_run_per_batch(
    tmp_path: Path, dagster_instance: dg.DagsterInstance
) -> None:
    data, hashes = replicated_data_dir(tmp_path)
    instance = dagster_instance
    with dg.build_sensor_context(instance=instance, cursor=None,
                                 resources=replication_resources(data)) as context:
        result = archival_director_sensor(context)
    assert isinstance(result, dg.SensorResult)
    batches = [r.run_config["ops"]["archive_batch_op"]["config"]["sha256s"]
               for r in result.run_requests or []]
    assert sorted(h for batch in batches for h in batch) == hashes
    assert all(len(batch) <= 2 for batch in batches)
    for batch in batches:
        run = archive_batch_job.execute_in_process(
            resources=replication_resources(data), instance=instance,
            run_config={"ops": {"archive_batch_op": {"config": {"sha256s": batch}}}})
        assert run.success
        assert log_lines(instance, run.run_id)[0] == (
            f"{len(batch)} copies made; policy met for every blob this run looked at")
    assert replica_files(data) == {f"{h}.zst" for h in hashes}
    with dg.build_sensor_context(instance=instance, cursor=None,
                                 resources=replication_resources(data)) as context:
        again = archival_director_sensor(context)
    assert isinstance(again, dg.SensorResult) and not again.run_requests
    scrub = scrub_job.execute_in_process(resources=replication_resources(data), instance=instance)
    assert scrub.success and scrub.output_for_node("scrub_op") == 0


def test_director_job_copies_every_batch_in_one_run(
    tmp_path: Path, dagster_instance: dg.DagsterInstance
) -> None:
    data, hashes = replicated_data_dir(tmp_path)
    run = archive_director_job.execute_in_process(resources=replication_resources(data),
                                                  instance=dagster_instance)
    assert run.success and run.output_for_node("archive_director_op") == len(hashes)
    assert replica_files(data) == {f"{h}.zst" for h in hashes}
    again = archive_director_job.execute_in_process(resources=replication_resources(data),
                                                    instance=dagster_instance)
    assert again.success and again.output_for_node("archive_director_op") == 0
