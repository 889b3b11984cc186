"""The `captures` asset, its job and `captures_sensor` on a real crawl of the test web."""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any

import dagster as dg
import pytest

from archive_pipelines.assets.captures import (
    CAPTURES_COMPLETE,
    captures,
    captures_complete,
    captures_job,
)
from archive_pipelines.assets.crawl import crawl_segments
from archive_pipelines.captures.lookup import find_session
from archive_pipelines.captures.record_parser import url_key
from archive_pipelines.captures.segment_files import SegmentPath
from archive_pipelines.captures.segment_ingest import ingest_crawl, pending_segments
from archive_pipelines.captures.sensor_logic import outside_data_dir
from archive_pipelines.replay.timestamps import timestamp_of
from archive_pipelines.resources import CatalogResource, SettingsResource, StorageResource
from archive_pipelines.sensors.captures import captures_sensor, reported_paths
from tests.helpers.captures import capture_primary, open_parts
from tests.helpers.crawls import Crawled
from tests.helpers.run_logs import log_lines

TOTALS = ("segments_ingested", "segments_failed", "pages", "captures", "stored_bodies",
          "new_body_bytes", "duplicate_body_bytes", "missing_bodies", "cut_bytes")


@pytest.fixture(autouse=True)
def _sqlite_catalog(monkeypatch: pytest.MonkeyPatch) -> None:
    """The resources read the environment: keep a PostgreSQL DATABASE_URL of the run out."""
    monkeypatch.delenv("DATABASE_URL", raising=False)


def _resources(data: Path) -> dict[str, Any]:
    """The resources as definitions.py wires them, on `data`."""
    settings = SettingsResource(data_dir=str(data))
    catalog = CatalogResource(settings=settings)
    return {"settings": settings, "catalog": catalog, "storage": StorageResource(catalog=catalog)}


def _pending(data: Path) -> list[SegmentPath]:
    with open_parts(data) as parts:
        return pending_segments(parts.catalog, data)[0]


def _days(data: Path) -> list[str]:
    days = sorted({segment.day for segment in _pending(data)})
    assert days, "the crawl left segments"
    return days


def _tick(instance: dg.DagsterInstance, data: Path, cursor: str | None = None) -> dg.SensorResult:
    with dg.build_sensor_context(instance=instance, cursor=cursor,
                                 resources=_resources(data)) as context:
        result = captures_sensor(context)
    assert isinstance(result, dg.SensorResult)
    return result


def _new_segment(data: Path) -> Path:
    """A copy of the first segment under a name the crawler could have written next."""
    source = sorted((data / "sessions").glob("*/*/*.jsonl"))[0]
    stamp, _counter = source.name.removesuffix(".jsonl").split("_")
    target = source.with_name(f"{stamp}_999999.jsonl")
    shutil.copyfile(source, target)
    return target


def _metadata(result: dg.ExecuteInProcessResult) -> list[dict[str, Any]]:
    return [{k: v.value for k, v in m.metadata.items()}
            for m in result.asset_materializations_for_node("captures")]


def test_the_job_from_definitions_ingests_a_day_and_reports_the_domain_numbers(
        crawled: Crawled, crawl_data: Path, tmp_path: Path,
        dagster_instance: dg.DagsterInstance, monkeypatch: pytest.MonkeyPatch) -> None:
    from archive_pipelines.definitions import defs

    reference = tmp_path / "reference"
    shutil.copytree(crawled.data_dir, reference, symlinks=True)
    monkeypatch.setenv("ARCHIVE_DATA_DIR", str(crawl_data))  # the resources of definitions.py
    job = defs.resolve_job_def(captures_job.name)
    pages = captures_total = 0
    dagster_instance.add_dynamic_partitions("crawl_days", _days(crawl_data))
    for day in _days(crawl_data):
        with open_parts(reference) as parts:
            expected = ingest_crawl(parts.catalog, capture_primary(parts), reference, day=day).to_dict()
        result = job.execute_in_process(partition_key=day, instance=dagster_instance)
        assert result.success
        [meta] = _metadata(result)
        assert {name: meta[f"run_{name}"] for name in TOTALS} == {name: expected[name] for name in TOTALS}
        assert meta["run_rejected_records"] == expected["rejected"] == 0
        assert meta["run_pages"] > 0 and meta["run_segments_ingested"] > 0
        # This run ingested all of the day: the day's figures (the catalog's) are the run's.
        assert (meta["day_pages"], meta["day_captures"], meta["day_segments"]) == (
            meta["run_pages"], meta["run_captures"], meta["run_segments_ingested"])
        sites = [dict(r.data) for r in meta["day_pages_per_site"].records]  # the day's, per site
        assert sum(site["pages"] for site in sites) == meta["day_pages"]
        assert sum(site["captures"] for site in sites) == meta["day_captures"]
        assert len(sites) == meta["day_sites"]
        assert [s["pages"] for s in sites] == sorted((s["pages"] for s in sites), reverse=True)
        assert all(site["site"].startswith("http") for site in sites)
        _check_replay_links(meta, reference, sites=min(len(sites), 10))
        for status_class, count in expected["status_classes"].items():
            assert meta[f"run_status_{status_class}"] == count
        assert meta["run_status_2xx"] > 0
        assert meta["run_status_5xx"] == expected["status_classes"].get("5xx", 0)
        checks = {check.check_name: check for check in result.get_asset_check_evaluations()}
        assert set(checks) == {CAPTURES_COMPLETE, "capture_qa"} and checks[CAPTURES_COMPLETE].passed
        assert checks["capture_qa"].passed  # an HTTP crawl: no browser capture falls short
        summary = (f"{meta['run_segments_ingested']:,} new segment(s) ingested (0 already in the "
                   f"catalog): {meta['run_pages']:,} pages, {meta['run_captures']:,} captures; bodies ")
        assert any(line.startswith(summary)
                   for line in log_lines(dagster_instance, result.run_id))
        pages, captures_total = pages + meta["day_pages"], captures_total + meta["day_captures"]
        again = job.execute_in_process(partition_key=day, instance=dagster_instance)
        [rerun] = _metadata(again)  # nothing left to ingest: the run's figures are 0, the day's kept
        assert rerun["run_pages"] == rerun["run_segments_ingested"] == 0
        assert {k: v for k, v in rerun.items() if k.startswith("day_") and k != "day_pages_per_site"} \
            == {k: v for k, v in meta.items() if k.startswith("day_") and k != "day_pages_per_site"}
    assert _pending(crawl_data) == []
    with open_parts(crawl_data) as parts:  # the catalog holds every page and capture
        session = crawled.report.session_id
        assert len(find_session(parts.catalog, session)) == pages >= crawled.report.pages
        assert len(find_session(parts.catalog, session, every_request=True)) == captures_total


def test_a_cut_segment_keeps_what_was_ingested_and_fails_the_check_and_the_run(
        crawl_data: Path, dagster_instance: dg.DagsterInstance) -> None:
    segment = _pending(crawl_data)[0]
    with segment.path.open("ab") as handle:
        handle.write(b'{"url": "https://cut.example/')  # a writer killed mid-record
    dagster_instance.add_dynamic_partitions("crawl_days", [segment.day])
    result = dg.materialize([captures, captures_complete], partition_key=segment.day,
                            instance=dagster_instance, resources=_resources(crawl_data),
                            raise_on_error=False)
    assert not result.success  # the run is red ...
    [meta] = _metadata(result)  # ... but the materialization and its counts are recorded
    assert meta["run_cut_bytes"] == len(b'{"url": "https://cut.example/') and meta["run_pages"] > 0
    [check] = result.get_asset_check_evaluations()
    assert check.check_name == CAPTURES_COMPLETE and not check.passed
    assert check.metadata["archive_cut_bytes"].value == meta["run_cut_bytes"]
    assert segment.relative in str(meta["problems"])
    assert segment not in _pending(crawl_data)  # ingested up to its last whole record


def test_the_sensor_finds_unreported_segments_on_disk_and_stops_once_they_are_ingested(
        crawl_data: Path, dagster_instance: dg.DagsterInstance) -> None:
    days = _days(crawl_data)
    first = _tick(dagster_instance, crawl_data)
    requests = first.run_requests or []
    assert [r.partition_key for r in requests] == days
    assert all(r.tags["captures/trigger"] == "disk scan" for r in requests)
    assert all(r.tags["archive/launched_by"] == "sensor:captures_sensor" for r in requests)
    # The days' partitions come with their runs; the daemon adds them before launching.
    [added] = first.dynamic_partitions_requests or []
    assert added.partitions_def_name == "crawl_days" and list(added.partition_keys) == days
    dagster_instance.add_dynamic_partitions("crawl_days", days)
    again = _tick(dagster_instance, crawl_data, first.cursor)
    assert [r.run_key for r in again.run_requests or []] == [r.run_key for r in requests]

    for request in requests:  # the runs the sensor asked for: the one asset alone
        assert request.partition_key is not None
        ran = dg.materialize([captures], partition_key=request.partition_key,
                             instance=dagster_instance, resources=_resources(crawl_data),
                             tags=request.tags)
        assert ran.success
    quiet = _tick(dagster_instance, crawl_data, again.cursor)
    assert not quiet.run_requests and quiet.skip_reason is not None

    _new_segment(crawl_data)
    renewed = _tick(dagster_instance, crawl_data, quiet.cursor)
    [request] = renewed.run_requests or []
    assert request.partition_key in days and request.tags["captures/pending_segments"] == "1"
    assert request.run_key not in {r.run_key for r in requests}


def test_a_reported_crawl_segment_leads_to_a_run_request(
        crawl_data: Path, dagster_instance: dg.DagsterInstance) -> None:
    segment = _pending(crawl_data)[0]
    quiet = _tick(dagster_instance, crawl_data)  # no event yet: the disk scan alone
    dagster_instance.report_runless_asset_event(dg.AssetMaterialization(
        asset_key=crawl_segments.key, partition=segment.day,
        metadata={"pages": dg.MetadataValue.int(150),
                  "segment_path": dg.MetadataValue.path(str(segment.path))}))
    reacted = _tick(dagster_instance, crawl_data, quiet.cursor)
    [request] = [r for r in reacted.run_requests or [] if r.partition_key == segment.day]
    assert request.tags["captures/trigger"] == "crawl_segments"
    assert reacted.cursor is not None and reacted.cursor != quiet.cursor
    later = _tick(dagster_instance, crawl_data, reacted.cursor)  # the event is read once
    assert all(r.tags["captures/trigger"] == "disk scan" for r in later.run_requests or [])


def test_a_day_whose_run_is_in_flight_is_not_requested_again(
        crawl_data: Path, dagster_instance: dg.DagsterInstance) -> None:
    [day, *_] = _days(crawl_data)
    dagster_instance.add_run(dg.DagsterRun(
        job_name=captures_job.name, run_id="0" * 32, status=dg.DagsterRunStatus.STARTED,
        tags={"dagster/partition": day}))
    tick = _tick(dagster_instance, crawl_data)
    assert day not in {r.partition_key for r in tick.run_requests or []}


@pytest.mark.unit
def test_the_lineage_and_the_wiring_in_definitions() -> None:
    from archive_pipelines.definitions import defs

    repo = defs.get_repository_def()
    node = repo.asset_graph.get(captures.key)
    assert crawl_segments.key in node.parent_keys
    assert node.group_name == "crawler" and node.partitions_def == crawl_segments.partitions_def
    assert repo.get_job(captures_job.name).asset_layer.selected_asset_keys == {captures.key}
    sensor = repo.get_sensor_def("captures_sensor")
    assert sensor.job_name == captures_job.name
    assert sensor.default_status == dg.DefaultSensorStatus.RUNNING


def test_captures_alone_is_a_valid_selection_among_every_asset_and_check(
        crawl_data: Path, dagster_instance: dg.DagsterInstance) -> None:
    from archive_pipelines.definitions import defs
    from archive_pipelines.resources.replication import ReplicationResource

    resources = _resources(crawl_data)
    resources["replication"] = ReplicationResource(catalog=resources["catalog"])
    day = _days(crawl_data)[0]
    dagster_instance.add_dynamic_partitions("crawl_days", [day])
    every = [a for a in defs.assets or () if isinstance(a, dg.AssetsDefinition | dg.AssetSpec)]
    result = dg.materialize([*every, *(defs.asset_checks or ())],
                            selection=[captures.key], partition_key=day,
                            instance=dagster_instance, resources=resources)
    assert result.success
    assert [m.asset_key for m in result.get_asset_materialization_events()] == [captures.key]


def test_segments_reported_outside_the_data_dir_are_named(
        crawl_data: Path, tmp_path: Path, dagster_instance: dg.DagsterInstance) -> None:
    inside = _pending(crawl_data)[0].path
    elsewhere = tmp_path / "other" / "sessions" / "2024-05-17" / "s" / "x.jsonl"
    for path in (inside, elsewhere):
        dagster_instance.report_runless_asset_event(dg.AssetMaterialization(
            asset_key=crawl_segments.key, partition="2024-05-17",
            metadata={"segment_path": dg.MetadataValue.path(str(path))}))
    events = dagster_instance.fetch_materializations(crawl_segments.key, limit=10).records
    assert sorted(reported_paths(events)) == sorted([str(inside), str(elsewhere)])
    assert outside_data_dir(reported_paths(events), crawl_data) == [str(elsewhere)]
    assert _tick(dagster_instance, crawl_data).run_requests  # a warning, not an error


def test_the_completeness_check_runs_alone(crawl_data: Path,
                                           dagster_instance: dg.DagsterInstance) -> None:
    """Selecting only `captures_complete` (Dagit's "execute check") is a valid subset."""
    result = dg.materialize([captures, captures_complete],
                            selection=dg.AssetSelection.checks(captures_complete),
                            instance=dagster_instance, resources=_resources(crawl_data))
    assert result.success and not result.asset_materializations_for_node("captures")
    [check] = result.get_asset_check_evaluations()
    assert check.check_name == CAPTURES_COMPLETE and check.passed


@pytest.mark.unit
def test_the_assets_form_one_lineage_graph() -> None:
    """crawl_segments -> captures and snapshots -> blobs -> views, both into replica_copies."""
    from archive_pipelines.definitions import defs

    graph = defs.resolve_asset_graph()
    keys = set(graph.get_all_asset_keys())
    linked = {dg.AssetKey("replica_copies")}
    changed = True
    while changed:
        changed = False
        for key in keys - linked:
            node = graph.get(key)
            if set(node.parent_keys) & linked or set(node.child_keys) & linked:
                linked.add(key)
                changed = True
    assert linked == keys


def _check_replay_links(meta: dict[str, Any], data_dir: Path, *, sites: int) -> None:
    """Dagit links the day's first page of each site to the replay server (settings: its
    default address): each names a page capture of the day at its own time."""
    link = meta["replay_first_page"]
    listed = re.findall(r"\]\((http://127\.0\.0\.1:8080/web/[^)]+)\)", meta["replay"])
    assert listed[0] == link and len(listed) == len(set(listed)) == sites
    with open_parts(data_dir) as parts, parts.catalog.reading() as tx:
        for each in listed:
            timestamp, url = each.split("/web/", 1)[1].split("/", 1)
            found = tx.captures.captures_by_url(url_key(url)[1])
            assert any(c.kind == "page" and timestamp_of(c.fetched_ms) == timestamp
                       for c in found), each
