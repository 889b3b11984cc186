"""Runs say what they did: each job's and asset's summary is an INFO line of the run's log on
the instance (what Dagit's run view shows), built from the domain report."""

from __future__ import annotations

import logging
from pathlib import Path

import dagster as dg

from archive_pipelines.ops.storage_jobs import gc_job, rebuild_views_job, verify_storage_job
from archive_pipelines.resources import CatalogResource, SettingsResource, StorageResource
from archive_pipelines.storage.assembly import StorageParts
from archive_pipelines.storage.file_ingest import ingest_directory
from archive_pipelines.storage.removal import remove_file
from tests.helpers.run_logs import log_lines
from tests.helpers.storage import add_snapshot, sha, write_tree


def _resources(data: Path) -> dict[str, object]:
    settings = SettingsResource(data_dir=str(data))
    return {"settings": settings, "storage": StorageResource(catalog=CatalogResource(settings=settings))}


def _garbage(storage: StorageParts, tmp_path: Path) -> str:
    """A snapshot with two files, one of them removed: its 4-byte blob is unreferenced."""
    sid = add_snapshot(storage)
    src = write_tree(tmp_path / "src", {"keep": b"keep", "drop": b"drop"})
    ingest_directory(storage.catalog, storage.primary, storage.views, work=storage.work,
                     snapshot_id=sid, extractor="wget", directory=src, hardlink=False)
    remove_file(storage.catalog, storage.views, sid, relative_path="wget/drop")
    return sha(b"drop")


def _run(job: dg.JobDefinition, op: str, data: Path, instance: dg.DagsterInstance,
         **config: object) -> list[str]:
    result = job.execute_in_process(resources=_resources(data), instance=instance,
                                    run_config={"ops": {op: {"config": config}}})
    assert result.success
    return log_lines(instance, result.run_id)


def test_gc_says_what_it_would_free_then_what_it_freed(
    sqlite_storage: StorageParts, data_dir: Path, tmp_path: Path,
    dagster_instance: dg.DagsterInstance,
) -> None:
    dropped = _garbage(sqlite_storage, tmp_path)
    dry = _run(gc_job, "gc_op", data_dir, dagster_instance, grace_hours=0.0, dry_run=True)
    assert dry[0] == ("dry run, nothing changed: would free 4 B in 1 blob(s) of 1 unreferenced "
                      "past the grace period")
    assert sqlite_storage.primary.store.exists(dropped)
    done = _run(gc_job, "gc_op", data_dir, dagster_instance, grace_hours=0.0)
    assert done[0] == "freed 4 B in 1 blob(s) of 1 unreferenced past the grace period"
    assert not sqlite_storage.primary.store.exists(dropped)


def test_verify_says_healthy_only_when_nothing_is_wrong(
    sqlite_storage: StorageParts, data_dir: Path, tmp_path: Path,
    dagster_instance: dg.DagsterInstance,
) -> None:
    dropped = _garbage(sqlite_storage, tmp_path)
    healthy = _run(verify_storage_job, "verify_storage_op", data_dir, dagster_instance)
    assert healthy[0].startswith("healthy: 1 referenced blobs and ")
    assert any("1 unreferenced blob(s): not a problem" in line for line in healthy)

    kept = sha(b"keep")
    sqlite_storage.primary.store.local_path(kept).unlink()  # a referenced blob's file lost
    result = verify_storage_job.execute_in_process(resources=_resources(data_dir),
                                                   instance=dagster_instance)
    summary = log_lines(dagster_instance, result.run_id)[0]
    assert summary.startswith("1 problem(s): 1 missing blob files (1 referenced blobs and "), summary
    warnings = log_lines(dagster_instance, result.run_id, level=logging.WARNING)
    assert any(kept in line for line in warnings)  # an example names the blob
    assert dropped not in summary


def test_rebuild_views_counts_the_links(
    sqlite_storage: StorageParts, data_dir: Path, tmp_path: Path,
    dagster_instance: dg.DagsterInstance,
) -> None:
    _garbage(sqlite_storage, tmp_path)
    [line] = _run(rebuild_views_job, "rebuild_views_op", data_dir, dagster_instance)
    assert " view links for 1 files of 1 snapshot(s): " in line
    assert "already right" in line


def test_the_snapshots_asset_says_what_it_migrated(
    tmp_path: Path, dagster_instance: dg.DagsterInstance,
) -> None:
    from datetime import UTC, datetime

    from archive_pipelines.assets.snapshots import snapshots
    from archive_pipelines.catalog import Catalog, make_engine
    from archive_pipelines.datadir import initialize
    from archive_pipelines.settings import load_settings

    data = tmp_path / "data"
    settings = load_settings(data, environ={})
    initialize(settings)
    folder = write_tree(data / "archive" / "1735128000.1", {
        "index.json": b'{"url": "https://a.test/", "timestamp": "1735128000.1"}',
        "wget/index.html": b"<html>a</html>"})
    engine = make_engine(settings.catalog_url)
    Catalog(engine).snapshots.add_snapshot(url="https://a.test/", timestamp=folder.name,
                                           fs_version="organized",
                                           created_at=datetime(2024, 12, 25, 12, tzinfo=UTC))
    engine.dispose()
    dagster_instance.add_dynamic_partitions("snapshot_days", ["2024-12-25"])
    result = dg.materialize([snapshots], partition_key="2024-12-25", instance=dagster_instance,
                            resources=_resources(data))
    assert result.success
    assert log_lines(dagster_instance, result.run_id) == [
        "1 snapshot(s) of the day; 1 migrated to the blob store now, 0 failed"]
