"""Adoption wiring: import_orphans_job, the two sensors, migrate_fs_job, the CLI."""

from pathlib import Path

import dagster as dg

from archive_pipelines.datadir import initialize
from archive_pipelines.ops.migration_jobs import import_orphans_job, migrate_fs_job
from archive_pipelines.resources import CatalogResource, SettingsResource, StorageResource
from archive_pipelines.sensors.migration import lazy_migration_sensor, orphan_import_sensor
from archive_pipelines.settings import load_settings
from archive_pipelines.storage.assembly import open_storage
from archive_pipelines.storage.verify import verify_storage
from archive_testkit.archivebox import ReleaseMix, generate_collection
from tests.helpers.cli import run_cli
from tests.helpers.run_logs import log_lines


def _resources(data: Path) -> dict[str, object]:
    settings = SettingsResource(data_dir=str(data))
    return {"settings": settings, "storage": StorageResource(catalog=CatalogResource(settings=settings))}


def test_sensors_and_jobs_adopt_a_legacy_collection(
    tmp_path: Path, dagster_instance: dg.DagsterInstance
) -> None:
    data = tmp_path / "data"
    initialize(load_settings(data, environ={}))
    manifest = generate_collection(data, ReleaseMix(releases=("0.4", "0.7", "0.8"), broken=1), snapshots=6)
    instance = dagster_instance
    resources = _resources(data)

    with dg.build_sensor_context(instance=instance, cursor=None, resources=resources) as ctx:
        noticed = orphan_import_sensor(ctx)
    assert isinstance(noticed, dg.SensorResult) and len(noticed.run_requests or []) == 1
    assert noticed.run_requests[0].tags == {"archive/launched_by": "sensor:orphan_import_sensor"}
    imported = import_orphans_job.execute_in_process(resources=resources, instance=instance)
    assert imported.success
    assert log_lines(instance, imported.run_id)[0].startswith(
        "7 folder(s) of archive/ looked at: 6 adopted as new snapshots, ")
    [step] = [e for e in imported.all_events if e.event_type_value == "STEP_OUTPUT"]
    meta = step.event_specific_data.metadata  # type: ignore[union-attr]
    assert meta["imported"].value == 6 and meta["invalid"].value == 1
    assert any((data / "invalid").rglob("*")), "the broken folder is moved, never deleted"

    with dg.build_sensor_context(instance=instance, cursor=None, resources=resources) as ctx:
        planned = lazy_migration_sensor(ctx)
    assert isinstance(planned, dg.SensorResult)
    batches = [r.run_config["ops"]["migrate_fs_op"]["config"]["snapshot_ids"]
               for r in planned.run_requests or []]
    assert sum(len(b) for b in batches) == 6
    assert {r.tags["archive/launched_by"] for r in planned.run_requests or []} == {
        "sensor:lazy_migration_sensor"}
    for batch in batches:
        run = migrate_fs_job.execute_in_process(
            resources=resources, instance=instance,
            run_config={"ops": {"migrate_fs_op": {"config": {"snapshot_ids": batch}}}})
        assert run.success
        said = log_lines(instance, run.run_id)[0]
        assert said.startswith(f"{len(batch)} snapshot(s) looked at: ")
        assert said.endswith(f", {len(batch)} brought to the current layout"), said
    with dg.build_sensor_context(instance=instance, cursor=None, resources=resources) as ctx:
        after = lazy_migration_sensor(ctx)
    assert isinstance(after, dg.SensorResult) and not after.run_requests
    storage = open_storage(load_settings(data, environ={}))
    assert verify_storage(storage.catalog, storage.primary, storage.views).problems == 0
    # Every original file is in the blob store byte for byte, or was moved to invalid/
    # (index.json files are rewritten by the reconcile, so they are not compared).
    stored = {p.name for p in (data / "cas" / "sha256").rglob("*") if p.is_file()}
    invalid = {p.name for p in (data / "invalid").rglob("*")}
    for rel, expected in manifest.files.items():
        if rel.endswith("index.json") or Path(rel).parts[1] in invalid:
            continue
        assert expected.sha256 in stored, rel


def test_update_command_adopts_and_migrates(tmp_path: Path) -> None:
    data = tmp_path / "data"
    assert run_cli("--data-dir", str(data), "init").returncode == 0
    generate_collection(data, ReleaseMix(releases=("0.7",)), snapshots=4)
    done = run_cli("--data-dir", str(data), "update", "--import-orphans", "--migrate-fs")
    assert done.returncode == 0, done.stderr
    assert "imported 4" in done.stdout and "migrated 4" in done.stdout
    verify = run_cli("--data-dir", str(data), "verify")
    assert verify.returncode == 0, verify.stdout
