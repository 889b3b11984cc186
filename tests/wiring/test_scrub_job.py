"""scrub_job runs the scrub command's code: rot at a replica is found and recorded, the
director job copies the blob again, and a store that cannot be read fails the run."""

from __future__ import annotations

from pathlib import Path

import dagster as dg

from archive_pipelines.ops.replication_jobs import archive_director_job, scrub_job
from tests.helpers.replication import flip_byte, replica_files, replicated_data_dir, replication_resources
from tests.helpers.run_logs import log_lines


def _scrub(data: Path, instance: dg.DagsterInstance, **config: object) -> dg.ExecuteInProcessResult:
    return scrub_job.execute_in_process(
        resources=replication_resources(data), instance=instance, raise_on_error=False,
        run_config={"ops": {"scrub_op": {"config": config}}})


def test_scrub_job_finds_rot_and_the_director_job_repairs_it(
    tmp_path: Path, dagster_instance: dg.DagsterInstance
) -> None:
    data, hashes = replicated_data_dir(tmp_path)
    assert archive_director_job.execute_in_process(resources=replication_resources(data),
                                                   instance=dagster_instance).success
    victim = hashes[1]
    flip_byte(data / "replicas" / "replica1" / "sha256" / victim[:2] / victim[2:4]
              / f"{victim}.zst", 12)

    found = _scrub(data, dagster_instance, store="replica1")
    assert found.success and found.output_for_node("scrub_op") == 1
    [materialized] = [e for e in found.all_events if e.event_type_value == "STEP_OUTPUT"]
    metadata = materialized.event_specific_data.metadata  # type: ignore[union-attr]
    assert metadata["checked"].value == len(hashes) and metadata["set_aside"].value == 1
    assert f"{victim}.zst" not in replica_files(data)
    summary, store = log_lines(dagster_instance, found.run_id)[:2]
    assert summary == (f"1 bad copies (missing or corrupt, marked to copy again): {len(hashes)} "
                       "copies checked at 1 store(s)")
    assert store.startswith(f"replica1: {len(hashes)} checked (")
    assert store.endswith(f"{len(hashes) - 1} ok, 0 missing, 1 corrupt (1 set aside in quarantine/)")

    assert archive_director_job.execute_in_process(resources=replication_resources(data),
                                                   instance=dagster_instance).success
    assert replica_files(data) == {f"{h}.zst" for h in hashes}
    clean = _scrub(data, dagster_instance, sample=0.5)
    assert clean.success and clean.output_for_node("scrub_op") == 0
    assert log_lines(dagster_instance, clean.run_id)[0].startswith("healthy: ")


def test_scrub_job_fails_on_an_unknown_store(
    tmp_path: Path, dagster_instance: dg.DagsterInstance
) -> None:
    data, _hashes = replicated_data_dir(tmp_path)
    run = _scrub(data, dagster_instance, store="nope")
    assert not run.success
