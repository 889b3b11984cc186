"""Storage assets, checks, jobs and the verify schedule on a temp Dagster instance."""

import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import dagster as dg
import pytest

from archive_pipelines.assets.snapshots import snapshots
from archive_pipelines.assets.storage import blobs, storage_health, views
from archive_pipelines.catalog import Catalog, make_engine
from archive_pipelines.datadir import initialize
from archive_pipelines.ops.storage_jobs import verify_storage_job
from archive_pipelines.resources import CatalogResource, SettingsResource, StorageResource
from archive_pipelines.sensors.schedules import verification_due
from archive_pipelines.settings import load_settings
from tests.helpers.run_logs import log_lines

ROOT = Path(__file__).resolve().parents[2]
DAGSTER = str(Path(sys.executable).with_name("dagster"))


TWO_SNAPSHOTS = (("1735128000.1", "https://a.test/"), ("1735131600.2", "https://b.test/"))


def _legacy_archive(data: Path, snapshots: tuple[tuple[str, str], ...] = TWO_SNAPSHOTS) -> None:
    """Legacy organized folders (by default two created on 2024-12-25), each with its own
    index.json and page, all sharing a 10,000-byte script."""
    for ts, url in snapshots:
        folder = data / "archive" / ts
        (folder / "wget").mkdir(parents=True)
        (folder / "index.json").write_text(f'{{"url": "{url}", "timestamp": "{ts}"}}')
        (folder / "wget" / "index.html").write_text(f"<html>{url}</html>")
        (folder / "wget" / "jquery.js").write_bytes(b"j" * 10_000)


def _known_to_the_catalog(data: Path, snapshots: tuple[tuple[str, str], ...]) -> None:
    """The catalog knows the snapshots (as an import would) but their files are legacy."""
    engine = make_engine(load_settings(data, environ={}).catalog_url)
    repo = Catalog(engine)
    for ts, url in snapshots:
        repo.snapshots.add_snapshot(url=url, timestamp=ts, fs_version="organized",
                                    created_at=datetime.fromtimestamp(float(ts), tz=UTC))
    engine.dispose()


def _resources(data: Path) -> dict[str, object]:
    settings = SettingsResource(data_dir=str(data))
    return {"settings": settings, "storage": StorageResource(catalog=CatalogResource(settings=settings))}


def test_backfilled_day_ingests_legacy_folders_and_builds_views(
    tmp_path: Path, dagster_instance: dg.DagsterInstance
) -> None:
    data = tmp_path / "data"
    initialize(load_settings(data, environ={}))
    _legacy_archive(data)
    _known_to_the_catalog(data, TWO_SNAPSHOTS)
    instance = dagster_instance
    instance.add_dynamic_partitions("snapshot_days", ["2024-12-25"])  # what the days sensor does
    result = dg.materialize([blobs, views, storage_health], partition_key="2024-12-25",
                            resources=_resources(data), instance=instance)
    assert result.success
    [blob_mat] = result.asset_materializations_for_node("blobs")
    meta = {k: v.value for k, v in blob_mat.metadata.items()}
    assert meta["day_files"] == 6 and meta["run_ingested_files"] == 6
    assert meta["day_deduplicated_files"] == 1 and meta["day_bytes_saved"] == 10_000
    assert float(meta["day_dedup_ratio"]) > 1.0
    [saving] = [dict(r.data) for r in meta["day_largest_savings"].records]  # the shared script
    assert saving["path"] == "wget/jquery.js" and saving["references"] == 2
    assert saving["bytes_saved"] == 10_000 and saving["saved"] == "9.8 KiB"
    assert "9.8 KiB saved by dedup" in str(meta["summary"])
    link = data / "archive" / "by_timestamp" / "1735128000.1" / "wget" / "jquery.js"
    assert link.read_bytes() == b"j" * 10_000
    checks = result.get_asset_check_evaluations()
    assert {c.check_name for c in checks} == {"blob_files_present", "ref_counts_exact",
                                              "view_links_healthy"}
    assert all(c.passed for c in checks)
    said = log_lines(instance, result.run_id)
    assert said[0] == ("6 files of the day's 2 snapshot(s): 19.7 KiB stored in 9.9 KiB "
                       "(1.98x); this run stored 6 files still in legacy folders"), said
    assert any(" view links for 6 files of 2 snapshot(s): " in line for line in said)


DAY_ONE = "2024-12-25"
DAY_TWO = "2024-12-26"  # three snapshots sharing the script the first day's two hold too
THREE_SNAPSHOTS = (("1735214400.1", "https://c.test/"), ("1735218000.2", "https://d.test/"),
                   ("1735221600.3", "https://e.test/"))


def test_each_days_figures_are_that_days_and_the_runs_are_labelled(
    tmp_path: Path, dagster_instance: dg.DagsterInstance
) -> None:
    """A blob shared across days counts, in a day's figures and savings table, only the
    day's files; what the run stored is labelled as the run's; the checks' figures are the
    archive's, counted when they ran."""
    data = tmp_path / "data"
    initialize(load_settings(data, environ={}))
    _legacy_archive(data, TWO_SNAPSHOTS + THREE_SNAPSHOTS)
    _known_to_the_catalog(data, TWO_SNAPSHOTS + THREE_SNAPSHOTS)
    dagster_instance.add_dynamic_partitions("snapshot_days", [DAY_ONE, DAY_TWO])

    def run(day: str, *, with_snapshots: bool = False) -> dict[str, dict[str, Any]]:
        assets = [snapshots] if with_snapshots else []
        result = dg.materialize([*assets, blobs, views, storage_health], partition_key=day,
                                resources=_resources(data), instance=dagster_instance)
        assert result.success
        found = {node: {k: v.value for k, v in m.metadata.items()}
                 for node in ("snapshots", "blobs", "views")
                 for m in result.asset_materializations_for_node(node)}
        checks = {c.check_name: {k: v.value for k, v in c.metadata.items()}
                  for c in result.get_asset_check_evaluations()}
        return found | checks

    one = run(DAY_ONE, with_snapshots=True)
    # `snapshots` stored the day's folders first: the day's files are there, this run's
    # `blobs` step stored none of them (what "new_blobs 0, files 36" meant).
    assert one["snapshots"]["day_snapshots"] == one["snapshots"]["run_snapshots_migrated"] == 2
    assert one["snapshots"]["day_incomplete_snapshots"] == 0
    assert (one["blobs"]["day_files"], one["blobs"]["run_ingested_files"]) == (6, 0)
    assert one["blobs"]["run_new_blobs"] == 0 and one["blobs"]["day_distinct_blobs"] == 5
    # Day one: 2 json + 2 pages + the script: 5 blobs; the checks count the archive so far.
    assert one["blob_files_present"]["archive_referenced_blobs_checked"] == 5
    two = run(DAY_TWO)
    day = two["blobs"]
    assert (day["day_snapshots"], day["day_files"], day["day_distinct_blobs"]) == (3, 9, 7)
    assert day["day_deduplicated_files"] == 2 and day["day_bytes_saved"] == 2 * 10_000
    assert (day["run_ingested_files"], day["run_new_blobs"]) == (9, 6)  # the script was stored
    [saving] = [dict(r.data) for r in day["day_largest_savings"].records]
    assert (saving["references"], saving["bytes_saved"], saving["archive_references"]) == (
        3, 2 * 10_000, 5)  # not (5 - 1) x 10,000: the other day's files are not this day's
    assert two["blob_files_present"]["archive_referenced_blobs_checked"] == 5 + 6
    assert two["ref_counts_exact"]["archive_referenced_blobs"] == 11
    assert two["view_links_healthy"]["archive_links_checked"] == (  # both days' links
        one["views"]["day_links"] + two["views"]["day_links"])
    links = two["views"]  # a file link per file, a folder link per snapshot in 3 other views
    assert (links["day_snapshots"], links["day_files"], links["day_link_conflicts"]) == (3, 9, 0)
    assert links["day_links"] == 9 + 3 * 3 == links["run_links_already_right"]  # blobs made them
    assert links["run_links_created"] == links["run_links_fixed"] == 0

    (data / "archive" / "by_timestamp" / "1735214400.1" / "wget" / "index.html").unlink()
    again = run(DAY_TWO)  # nothing left to store, one link to make again; the day's the same
    assert (again["blobs"]["run_ingested_files"], again["blobs"]["run_new_blobs"]) == (0, 0)
    assert {k: v for k, v in again["blobs"].items() if k.startswith("day_")
            and k != "day_largest_savings"} == {k: v for k, v in day.items() if k.startswith("day_")
                                                and k != "day_largest_savings"}
    assert again["views"]["run_links_created"] == 1 and again["views"]["day_links"] == 18
    assert again["views"]["run_links_already_right"] == 17
    first = _latest(dagster_instance, "blobs", DAY_ONE)  # the other day's record is its own
    assert (first["day_files"], first["day_bytes_saved"]) == (6, 10_000)


def _latest(instance: dg.DagsterInstance, asset: str, day: str) -> dict[str, Any]:
    [record] = instance.fetch_materializations(
        dg.AssetRecordsFilter(dg.AssetKey(asset), asset_partitions=[day]), limit=1).records
    assert record.asset_materialization is not None
    return {k: v.value for k, v in record.asset_materialization.metadata.items()}


def test_jobs_run_from_the_dagster_cli_with_and_without_config(tmp_path: Path,
                                                               dagster_home: Path) -> None:
    data = tmp_path / "data"
    initialize(load_settings(data, environ={}))
    _legacy_archive(data)
    env = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"}
    env.update(ARCHIVE_DATA_DIR=str(data), DAGSTER_HOME=str(dagster_home))
    config = tmp_path / "migrate.yaml"
    config.write_text("ops:\n  migrate_to_cas_op:\n    config:\n      dry_run: true\n")

    def execute(job: str, *extra: str) -> str:
        done = subprocess.run([DAGSTER, "job", "execute", "-m", "archive_pipelines.definitions",
                               "-j", job, *extra], cwd=ROOT, env=env, capture_output=True,
                              text=True, timeout=300)
        assert done.returncode == 0, done.stdout + done.stderr
        return done.stdout + done.stderr

    dry = execute("migrate_to_cas_job", "-c", str(config))
    assert "RUN_SUCCESS" in dry
    # What the run did, as INFO lines of `dagster job execute`'s output (not only DEBUG events).
    assert " - INFO - migrate_to_cas_job - " in dry
    assert "dry run, nothing written: 6 files of 2 legacy folder(s) would take " in dry
    assert not (data / "cas" / "sha256").exists()  # dry run wrote nothing
    said = {"migrate_to_cas_job": "2 snapshot(s) looked at: 6 files in the blob store (5 new blobs, ",
            "rebuild_views_job": " view links for 6 files of 2 snapshot(s): ",
            "verify_storage_job": " - INFO - verify_storage_job - ",
            "gc_job": "freed 0 B in 0 blob(s) of 0 unreferenced past the grace period"}
    for job, line in said.items():
        output = execute(job, "--tags", '{"archive/launched_by": "cli"}')
        assert "RUN_SUCCESS" in output and line in output, output
        if job == "verify_storage_job":
            assert " - verify_storage_op - healthy: 5 referenced blobs and " in output
    assert (data / "archive" / "by_timestamp" / "1735131600.2" / "wget" / "index.html").exists()


def test_verify_job_reports_problems_as_metadata(
    tmp_path: Path, dagster_instance: dg.DagsterInstance
) -> None:
    data = tmp_path / "data"
    initialize(load_settings(data, environ={}))
    orphan = data / "archive" / "by_date" / "20200101" / "x.test" / "id" / "wget" / "f"
    orphan.parent.mkdir(parents=True)
    os.symlink("nowhere", orphan)
    result = verify_storage_job.execute_in_process(
        resources=_resources(data), instance=dagster_instance,
        run_config={"ops": {"verify_storage_op": {"config": {"fix": True, "vacuum": True}}}})
    assert result.success
    assert result.output_for_node("verify_storage_op") == 0
    assert not orphan.exists()


@pytest.mark.unit
def test_verification_due() -> None:
    now = datetime(2026, 1, 2, tzinfo=UTC)
    assert verification_due(None, now, 24)
    assert not verification_due(now - timedelta(hours=23), now, 24)
    assert verification_due(now - timedelta(hours=24), now, 24)


def test_verify_schedule_runs_when_due(dagster_instance: dg.DagsterInstance,
                                       monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from archive_pipelines.sensors.schedules import verify_storage_schedule

    monkeypatch.setenv("ARCHIVE_DATA_DIR", str(tmp_path / "data"))
    with dg.build_schedule_context(instance=dagster_instance,
                                   resources={"settings": SettingsResource()},
                                   scheduled_execution_time=datetime(2026, 1, 2, tzinfo=UTC)
                                   ) as context:
        decision = verify_storage_schedule(context)
    assert isinstance(decision, dg.RunRequest)


def test_verify_schedule_skips_until_the_last_run_is_old_enough(
        dagster_instance: dg.DagsterInstance, monkeypatch: pytest.MonkeyPatch,
        tmp_path: Path) -> None:
    from archive_pipelines.definitions import defs
    from archive_pipelines.sensors.schedules import verify_storage_schedule

    data = tmp_path / "data"
    monkeypatch.setenv("ARCHIVE_DATA_DIR", str(data))
    initialize(load_settings(data, environ={}))
    ran = defs.get_job_def("verify_storage_job").execute_in_process(instance=dagster_instance)
    assert ran.success
    started = datetime.now(UTC)
    for later, due in ((timedelta(hours=1), False), (timedelta(hours=25), True)):
        with dg.build_schedule_context(instance=dagster_instance,
                                       resources={"settings": SettingsResource()},
                                       scheduled_execution_time=started + later) as context:
            decision = verify_storage_schedule(context)
        assert isinstance(decision, dg.RunRequest if due else dg.SkipReason), decision


def test_a_step_closes_every_storage_it_opened(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                               dagster_instance: dg.DagsterInstance) -> None:
    """Worker processes are stopped when the step ends, not left to the interpreter's exit."""
    import archive_pipelines.resources.storage as resource_module
    from archive_pipelines.storage.assembly import StorageParts

    data = tmp_path / "data"
    initialize(load_settings(data, environ={}))
    opened: list[object] = []
    closed: list[object] = []
    real_open, real_close = resource_module.open_storage, StorageParts.close

    def tracked_open(*args: object, **kwargs: object) -> StorageParts:
        storage = real_open(*args, **kwargs)  # type: ignore[arg-type]
        opened.append(storage)
        return storage

    def tracked_close(self: StorageParts) -> None:
        closed.append(self)
        real_close(self)

    monkeypatch.setattr(resource_module, "open_storage", tracked_open)
    monkeypatch.setattr(StorageParts, "close", tracked_close)
    result = verify_storage_job.execute_in_process(resources=_resources(data),
                                                   instance=dagster_instance)
    assert result.success
    assert opened and all(storage in closed for storage in opened)


def test_every_storage_asset_and_check_runs_alone(tmp_path: Path,
                                                  dagster_instance: dg.DagsterInstance) -> None:
    """A one-asset backfill of blobs or views, or one check, builds and runs on its own."""
    data = tmp_path / "data"
    initialize(load_settings(data, environ={}))
    checks = [dg.AssetCheckKey(blobs.key, "blob_files_present"),
              dg.AssetCheckKey(blobs.key, "ref_counts_exact"),
              dg.AssetCheckKey(views.key, "view_links_healthy")]
    for check in checks:
        job = dg.define_asset_job(f"only_{check.name}", selection=dg.AssetSelection.checks(check))
        defs = dg.Definitions(assets=[blobs, views], asset_checks=[storage_health], jobs=[job],
                              resources=_resources(data))
        result = defs.resolve_job_def(job.name).execute_in_process(instance=dagster_instance)
        assert result.success
        evaluations = result.get_asset_check_evaluations()
        assert [(e.asset_check_key, e.passed) for e in evaluations] == [(check, True)]
    for asset in (blobs, views):
        job = dg.define_asset_job(f"only_{asset.key.path[0]}",
                                  selection=dg.AssetSelection.assets(asset))
        defs = dg.Definitions(assets=[blobs, views], asset_checks=[storage_health], jobs=[job],
                              resources=_resources(data))
        assert defs.resolve_job_def(job.name) is not None  # was DagsterInvalidSubsetError
