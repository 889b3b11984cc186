"""The days sensor: a partition for each day with snapshots or crawl segments, added once."""

from datetime import UTC, datetime
from pathlib import Path

import dagster as dg
import pytest

from archive_pipelines.catalog import Catalog, make_engine
from archive_pipelines.datadir import initialize
from archive_pipelines.definitions import defs
from archive_pipelines.resources import CatalogResource, SettingsResource
from archive_pipelines.sensors.days import days_sensor
from archive_pipelines.settings import load_settings

SESSION = "0b0e4b7c-6d7e-4c55-9a5e-3f2f2f4a9d01"


def _tick(instance: dg.DagsterInstance, data: Path) -> dg.SensorResult:
    resources = {"catalog": CatalogResource(settings=SettingsResource(data_dir=str(data)))}
    with dg.build_sensor_context(instance=instance, resources=resources) as context:
        result = days_sensor(context)
    assert isinstance(result, dg.SensorResult)
    return result


def _added(result: dg.SensorResult) -> dict[str, list[str]]:
    return {r.partitions_def_name: list(r.partition_keys)
            for r in result.dynamic_partitions_requests or []}


def test_each_day_with_data_becomes_a_partition_once(tmp_path: Path,
                                                     dagster_instance: dg.DagsterInstance) -> None:
    data = tmp_path / "data"
    initialize(load_settings(data, environ={}))
    quiet = _tick(dagster_instance, data)
    assert _added(quiet) == {} and "0 day(s) with snapshots" in str(quiet.skip_reason)

    engine = make_engine(load_settings(data, environ={}).catalog_url)
    repo = Catalog(engine)
    moments = [datetime(1999, 1, 2, 3, tzinfo=UTC), datetime(2024, 12, 25, 1, tzinfo=UTC),
               datetime(2024, 12, 25, 23, tzinfo=UTC)]
    for n, moment in enumerate(moments):
        repo.snapshots.add_snapshot(url=f"https://a.test/{n}", timestamp=f"{moment.timestamp()}",
                          created_at=moment)
    engine.dispose()
    segment = data / "sessions" / "2024-05-17" / SESSION / "20240517T101500000000Z_000001.jsonl"
    segment.parent.mkdir(parents=True)
    segment.write_text('{"url": "https://a.test/"}\n')
    (data / "sessions" / "not-a-day").mkdir()  # reported by the captures sensor, no partition

    first = _tick(dagster_instance, data)
    assert _added(first) == {"snapshot_days": ["1999-01-02", "2024-12-25"],
                             "crawl_days": ["2024-05-17"]}
    assert first.skip_reason is None and not first.run_requests  # it launches nothing
    for request in first.dynamic_partitions_requests or []:  # as the daemon applies them
        dagster_instance.add_dynamic_partitions(request.partitions_def_name, list(request.partition_keys))

    again = _tick(dagster_instance, data)
    assert _added(again) == {}
    assert again.skip_reason is not None
    assert again.skip_reason.skip_message == ("no new day: 2 day(s) with snapshots and 1 with crawl "
                                 "segments, each already a partition")


@pytest.mark.unit
def test_which_automation_is_on_by_default() -> None:
    """On: what launches nothing or only what the settings ask for. Off: what moves an
    operator's folders, imports the files put in a folder, or reads every object of every
    store."""
    repo = defs.get_repository_def()
    running = dg.DefaultSensorStatus.RUNNING
    sensors = {s.name: s.default_status == running for s in repo.sensor_defs}
    assert sensors == {"days_sensor": True, "captures_sensor": True,
                       "archival_director_sensor": True, "run_failure_sensor": True,
                       "lazy_migration_sensor": False, "orphan_import_sensor": False,
                       "warc_inbox_sensor": False, "crawls_sensor": True}
    schedules = {s.name: s.default_status == dg.DefaultScheduleStatus.RUNNING
                 for s in repo.schedule_defs}
    assert schedules == {"verify_storage_schedule": True, "scrub_schedule": False}
