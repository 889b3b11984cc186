"""Crawls from Dagster: `crawl_job` queues a crawl of a definition and says whether anything
will take it, a definition's schedule queues one on its cadence (and not while the last is
still waiting), the crawls sensor records each crawl in its `crawls` partition, and the
`crawl_taken` check turns red when a queued crawl waits too long."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime
from pathlib import Path

import dagster as dg
import pytest

from archive_pipelines.assets.crawl_job import crawl_job
from archive_pipelines.assets.crawl_requests import CRAWL_TAKEN, crawl_taken
from archive_pipelines.catalog import Catalog
from archive_pipelines.crawls.requests import (
    claim_crawl,
    crawler_alive,
    finish_crawl,
    get_crawl,
    heartbeat,
    list_crawls,
)
from archive_pipelines.resources import CatalogResource, SettingsResource
from archive_pipelines.sensors.crawl_schedules import crawl_schedules, schedule_name
from archive_pipelines.sensors.crawls import crawls_sensor
from archive_pipelines.settings import Settings, load_settings
from tests.helpers.crawl_definitions import data_dir_defining

DEFINITIONS = """
[[crawls]]
name = "docs-weekly"
seeds = ["http://docs.test/"]
cadence = "0 3 * * 1"

[[crawls]]
name = "by-hand"
seeds = ["http://hand.test/"]
"""


@pytest.fixture
def data(tmp_path: Path) -> Path:
    return data_dir_defining(tmp_path / "data", DEFINITIONS)


def _settings(data: Path) -> Settings:
    return load_settings(data, environ={})


def _catalog(data: Path) -> Catalog:
    settings = _settings(data)
    return Catalog.open(settings.catalog_url, shared=True)


def _resources(data: Path) -> dict[str, object]:
    return {"catalog": CatalogResource(settings=SettingsResource(data_dir=str(data)))}


def _queue(data: Path, instance: dg.DagsterInstance, name: str = "by-hand",
           tags: dict[str, str] | None = None) -> dg.ExecuteInProcessResult:
    return crawl_job.execute_in_process(
        run_config={"ops": {"queue_crawl_op": {"config": {"definition": name}}}},
        resources=_resources(data), instance=instance, tags=tags)


def _output_metadata(result: dg.ExecuteInProcessResult) -> dict[str, object]:
    [output] = [e for e in result.all_events if e.event_type_value == "STEP_OUTPUT"]
    return {k: v.value for k, v in output.event_specific_data.metadata.items()}  # type: ignore[union-attr]


def _logged(result: dg.ExecuteInProcessResult, instance: dg.DagsterInstance) -> list[str]:
    return [r.user_message for r in instance.all_logs(result.run_id)]


def test_the_job_queues_a_crawl_and_says_nothing_takes_it(
    data: Path, dagster_instance: dg.DagsterInstance,
) -> None:
    result = _queue(data, dagster_instance)
    assert result.success
    crawl_id = result.output_for_node("queue_crawl_op")
    request = get_crawl(_catalog(data), crawl_id)
    assert request is not None and request.state == "queued"
    assert request.definition_name == "by-hand" and crawl_id.startswith("by-hand-")
    assert request.requested_by == f"dagster run {result.run_id}"
    assert request.definition == _settings(data).crawl_definition("by-hand").as_dict()
    metadata = _output_metadata(result)
    assert metadata["crawl_id"] == crawl_id and metadata["state"] == "queued"
    assert metadata["crawler_alive"] is False
    assert str(metadata["status"]).startswith("queued; no crawler has taken it yet; no "
                                              "crawler has ever run")
    assert any(line.startswith(f"queued crawl {crawl_id}; queued; no crawler has taken it yet")
               for line in _logged(result, dagster_instance))


def test_with_a_crawler_alive_the_run_says_so(data: Path,
                                              dagster_instance: dg.DagsterInstance) -> None:
    crawler_alive(_catalog(data), "host:42", running=0)
    result = _queue(data, dagster_instance)
    assert _output_metadata(result)["crawler_alive"] is True
    assert any("crawlers taking requests: host:42 (0 running)" in line
               for line in _logged(result, dagster_instance))


def test_an_unknown_definition_fails_the_run_naming_the_known_ones(
    data: Path, dagster_instance: dg.DagsterInstance,
) -> None:
    result = crawl_job.execute_in_process(
        run_config={"ops": {"queue_crawl_op": {"config": {"definition": "nope"}}}},
        resources=_resources(data), instance=dagster_instance, raise_on_error=False)
    assert not result.success
    [failure] = [e for e in result.all_events if e.event_type_value == "STEP_FAILURE"]
    assert "no crawl definition is named 'nope'" in str(failure.event_specific_data)
    assert "defined: docs-weekly, by-hand" in str(failure.event_specific_data)
    assert list_crawls(_catalog(data)) == []


def test_only_definitions_with_a_cadence_have_a_schedule(data: Path) -> None:
    [schedule] = crawl_schedules(_settings(data))
    assert schedule.name == schedule_name("docs-weekly") == "crawl_docs_weekly_schedule"
    assert schedule.cron_schedule == "0 3 * * 1"
    assert schedule.execution_timezone == "UTC"
    assert schedule.default_status == dg.DefaultScheduleStatus.RUNNING


def test_a_schedule_tick_queues_a_crawl_and_skips_while_it_waits(
    data: Path, dagster_instance: dg.DagsterInstance,
) -> None:
    [schedule] = crawl_schedules(_settings(data))
    when = datetime(2025, 1, 6, 3, tzinfo=UTC)
    with dg.build_schedule_context(instance=dagster_instance, resources=_resources(data),
                                   scheduled_execution_time=when) as context:
        request = schedule(context)
    assert isinstance(request, dg.RunRequest)
    assert request.run_key == "crawl_docs_weekly_schedule-20250106T0300"
    # The daemon launches the request as a run tagged with the schedule's name.
    result = crawl_job.execute_in_process(
        run_config=request.run_config, resources=_resources(data), instance=dagster_instance,
        tags={**request.tags, "dagster/schedule_name": schedule.name})
    assert result.success
    [queued] = list_crawls(_catalog(data))
    assert queued.definition_name == "docs-weekly"
    assert queued.requested_by == "schedule crawl_docs_weekly_schedule"

    with dg.build_schedule_context(instance=dagster_instance, resources=_resources(data),
                                   scheduled_execution_time=when) as context:
        skipped = schedule(context)
    assert isinstance(skipped, dg.SkipReason)
    assert f"{queued.crawl_id}, is still queued" in str(skipped.skip_message)


def _tick(data: Path, instance: dg.DagsterInstance, cursor: str | None) -> dg.SensorResult:
    with dg.build_sensor_context(instance=instance, resources=_resources(data),
                                 cursor=cursor) as context:
        result = crawls_sensor(context)
    assert isinstance(result, dg.SensorResult)
    return result


def test_the_sensor_records_a_crawl_as_it_is_queued_runs_and_ends(
    data: Path, dagster_instance: dg.DagsterInstance,
) -> None:
    crawl_id = _queue(data, dagster_instance).output_for_node("queue_crawl_op")
    first = _tick(data, dagster_instance, None)
    [queued] = [e for e in first.asset_events if isinstance(e, dg.AssetMaterialization)]
    assert queued.partition == crawl_id and queued.metadata["state"].value == "queued"
    [add] = first.dynamic_partitions_requests or []
    assert isinstance(add, dg.AddDynamicPartitionsRequest) and list(add.partition_keys) == [crawl_id]
    [check] = [e for e in first.asset_events if isinstance(e, dg.AssetCheckEvaluation)]
    assert check.passed and check.check_name == CRAWL_TAKEN  # queued just now
    dagster_instance.add_dynamic_partitions("crawl_ids", [crawl_id])  # as the daemon would

    quiet = _tick(data, dagster_instance, first.cursor)
    assert quiet.asset_events == [] and quiet.skip_reason is not None

    catalog = _catalog(data)
    taken = claim_crawl(catalog, worker="host:7")
    assert taken is not None and taken.crawl_id == crawl_id
    assert heartbeat(catalog, taken.id, worker="host:7", progress={"pages": 3})
    running = _tick(data, dagster_instance, quiet.cursor)
    [event] = running.asset_events
    assert isinstance(event, dg.AssetMaterialization)
    assert event.metadata["state"].value == "running" and event.metadata["pages"].value == 3
    assert not running.dynamic_partitions_requests  # the partition exists

    assert finish_crawl(catalog, taken.id, worker="host:7", state="finished",
                        outcome={"pages": 12, "new_bodies": 9, "unchanged": 3, "errors": 1,
                                 "stopped_because": "nothing left to fetch"})
    ended = _tick(data, dagster_instance, running.cursor)
    [event] = ended.asset_events
    assert isinstance(event, dg.AssetMaterialization) and event.partition == crawl_id
    shown = {key: value.value for key, value in event.metadata.items()}
    assert shown["state"] == "finished"
    assert (shown["pages"], shown["new_bodies"], shown["unchanged"], shown["errors"]) == (12, 9, 3, 1)
    assert shown["stopped_because"] == "nothing left to fetch"
    assert shown["status"] == "finished: nothing left to fetch"
    assert shown["crawler"] == "host:7" and str(shown["requested_by"]).startswith("dagster run ")
    assert {"queued_at", "started_at", "finished_at"} <= set(shown)
    assert json.loads(ended.cursor or "{}")["seen"].keys() == {crawl_id}


def _check(data: Path) -> dg.AssetCheckResult:
    result = crawl_taken(catalog=CatalogResource(settings=SettingsResource(data_dir=str(data))))
    assert isinstance(result, dg.AssetCheckResult)
    return result


def test_the_check_fails_for_a_crawl_waiting_too_long_and_passes_otherwise(
    data: Path, dagster_instance: dg.DagsterInstance,
) -> None:
    (data / "archive.toml").write_text("[crawl]\nqueued_alert_minutes = 10\n" + DEFINITIONS)
    assert _check(data).passed  # nothing queued

    crawl_id = _queue(data, dagster_instance).output_for_node("queue_crawl_op")
    assert _check(data).passed  # queued less than 10 minutes ago
    # The alert after 0.005 min (0.3 s): the same crawl has now waited too long.
    (data / "archive.toml").write_text("[crawl]\nqueued_alert_minutes = 0.005\n" + DEFINITIONS)
    time.sleep(0.5)
    red = _check(data)
    assert not red.passed and red.severity == dg.AssetCheckSeverity.ERROR
    assert red.metadata["waiting"].value == 1
    assert crawl_id in str(red.metadata["waiting_crawls"].value)
    assert "no crawler has ever run on this catalog" in str(red.metadata["summary"].value)

    # The sensor reports it (once: again only when it changes).
    first = _tick(data, dagster_instance, None)
    [check] = [e for e in first.asset_events if isinstance(e, dg.AssetCheckEvaluation)]
    assert not check.passed
    again = _tick(data, dagster_instance, first.cursor)
    assert again.asset_events == []

    catalog = _catalog(data)
    assert claim_crawl(catalog, worker="host:1") is not None
    assert _check(data).passed  # taken
    taken = _tick(data, dagster_instance, again.cursor)
    [check] = [e for e in taken.asset_events if isinstance(e, dg.AssetCheckEvaluation)]
    assert check.passed


def test_the_code_location_reads_the_schedules_from_the_data_dir(
    data: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture,
) -> None:
    from archive_pipelines.sensors.crawl_schedules import configured_crawl_schedules

    monkeypatch.setenv("ARCHIVE_DATA_DIR", str(data))
    assert [s.name for s in configured_crawl_schedules()] == ["crawl_docs_weekly_schedule"]
    (data / "archive.toml").write_text('[[crawls]]\nname = "x"\nseeds = []\n')
    assert configured_crawl_schedules() == []  # the code location still loads
    assert "no crawl schedules: " in caplog.text and "`crawls.'x'.seeds`" in caplog.text
