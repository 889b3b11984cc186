"""Replication wiring: the partitioned asset and its check, the director sensor, the jobs."""

from collections import Counter
from pathlib import Path

import dagster as dg

from archive_pipelines.assets.replication import replica_copies, replication_policy_met
from archive_pipelines.blobstore.hash_prefixes import HEX_PREFIXES
from archive_pipelines.catalog import Catalog, make_engine
from archive_pipelines.ops.replication_jobs import archive_batch_job, archive_director_job, scrub_job
from archive_pipelines.replication import ReplicaSet, plan_scrubs
from archive_pipelines.sensors.director import archival_director_sensor
from archive_pipelines.settings import load_settings
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
    assert [dict(r.data) for r in check.metadata["archive_copies_per_store"].value.records] == [
        {"store": "primary", "missing": 0, "ongoing": 0, "present": 5, "corrupted": 0},
        {"store": "replica1", "missing": 0, "ongoing": 0, "present": 5, "corrupted": 0}]


def test_a_range_of_prefixes_is_one_run(tmp_path: Path, dagster_instance: dg.DagsterInstance) -> None:
    """A run over a range of partitions (what a backfill launches, 8 prefixes at a time; a
    run over all 256 works as well) walks the range."""
    data, hashes = replicated_data_dir(tmp_path)
    low = min(h[:2] for h in hashes)
    result = dg.materialize([replica_copies], resources=replication_resources(data),
                            instance=dagster_instance, tags=_range(low, low))
    assert result.success and replica_files(data) == {f"{h}.zst" for h in hashes if h[:2] == low}
    result = dg.materialize([replica_copies], resources=replication_resources(data),
                            instance=dagster_instance, tags=_range("00", "ff"))
    assert result.success
    assert replica_files(data) == {f"{h}.zst" for h in hashes}
    events = result.get_asset_materialization_events()
    assert sorted(e.partition for e in events) == list(HEX_PREFIXES)  # each prefix once
    assert replica_copies.backfill_policy == dg.BackfillPolicy.multi_run(max_partitions_per_run=8)


def test_each_prefix_of_a_range_run_records_its_own_counts(
    tmp_path: Path, dagster_instance: dg.DagsterInstance
) -> None:
    """After a run over 00..ff, each partition's latest materialization holds its prefix's
    figures (as `scrub --prefix` counts the prefix's copies in the catalog), not the run's."""
    data, hashes = replicated_data_dir(tmp_path, files=600)
    per_prefix = Counter(h[:2] for h in hashes)
    assert max(per_prefix.values()) > 1 and len(per_prefix) < 256  # full, shared, empty ones
    one = min(per_prefix)  # a prefix materialized alone first, then again within the range
    assert dg.materialize([replica_copies], partition_key=one, instance=dagster_instance,
                          resources=replication_resources(data)).success
    result = dg.materialize([replica_copies], resources=replication_resources(data),
                            instance=dagster_instance, tags=_range("00", "ff"))
    assert result.success
    scrubs = _scrub_counts(data)
    for prefix in HEX_PREFIXES:
        latest, scrub = _latest(dagster_instance, prefix), scrubs[prefix]
        copied_before = per_prefix[prefix] if prefix == one else 0
        assert latest["prefix_blobs_checked"] == per_prefix[prefix] == scrub["primary"], prefix
        assert latest["run_copies_made"] == latest["run_copies_to_replica1"] \
            == scrub["replica1"] - copied_before, prefix
        assert latest["run_copies_to_primary"] == 0 and latest["run_missing_found"] == 0
        assert str(latest["summary"]).startswith(
            f"prefix {prefix}: {per_prefix[prefix]:,} referenced blobs checked"), prefix
    records = dagster_instance.fetch_materializations(replica_copies.key, limit=1000).records
    assert len(records) == 256 + 1  # one per prefix in the range, nothing for the run's totals
    logs = [e.message for e in dagster_instance.all_logs(result.run_id)]
    assert any(f"{len(hashes):,} blobs checked" in m for m in logs)  # the run's totals


def _range(start: str, end: str) -> dict[str, str]:
    return {"dagster/asset_partition_range_start": start,
            "dagster/asset_partition_range_end": end}


def _scrub_counts(data: Path) -> dict[str, dict[str, int]]:
    """Per prefix, the copies `scrub --prefix` would read at each store (from the catalog)."""
    settings = load_settings(data, environ={})
    engine = make_engine(settings.catalog_url)
    try:
        catalog = Catalog(engine)
        replicas = ReplicaSet.open(catalog, settings)
        return {prefix: {plan.store: plan.copies
                         for plan in plan_scrubs(catalog, replicas, prefix=prefix)}
                for prefix in HEX_PREFIXES}
    finally:
        engine.dispose()


def _latest(instance: dg.DagsterInstance, prefix: str) -> dict[str, object]:
    """The metadata of the partition's latest materialization on the instance."""
    [record] = instance.fetch_materializations(
        dg.AssetRecordsFilter(replica_copies.key, asset_partitions=[prefix]), limit=1).records
    assert record.asset_materialization is not None
    return {k: v.value for k, v in record.asset_materialization.metadata.items()}


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
