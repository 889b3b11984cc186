"""`import_warc_job` and `warc_inbox_sensor` from definitions.py on a data dir made by `init`:
a WARC imported with its counts as metadata and its URLs found by `captures`; a hostile file
fails the run after its good records are imported; a path that is not there fails clearly;
the sensor asks for a file once it has settled, once per version of the file, and the run it
asks for imports the file and leaves it where it lies."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import dagster as dg
import pytest

from archive_pipelines.assets import warc_import
from archive_pipelines.assets.warc_import import import_warc_job
from archive_pipelines.captures.lookup import find_url
from archive_pipelines.datadir import initialize
from archive_pipelines.resources import SettingsResource
from archive_pipelines.run_labels import LAUNCHED_BY
from archive_pipelines.sensors.warc_inbox import warc_inbox_sensor
from archive_pipelines.settings import load_settings
from archive_testkit.hostile_records import page, response_bytes, write_records
from archive_testkit.hostile_warcs import wrong_payload_digest_warc
from tests.helpers.captures import open_parts

PAGES = [page(index) for index in range(10, 15)]


@pytest.fixture
def data(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An initialized data dir (SQLite catalog), the one the code location's resources open."""
    monkeypatch.delenv("DATABASE_URL", raising=False)
    root = tmp_path / "data"
    initialize(load_settings(root, environ={}))
    monkeypatch.setenv("ARCHIVE_DATA_DIR", str(root))
    return root


def _good_warc(path: Path) -> Path:
    """Five ordinary responses written by warcio, one gzip member each."""
    path.parent.mkdir(parents=True, exist_ok=True)
    write_records(path, [response_bytes(url, body, index=i).data
                         for i, (url, body) in enumerate(PAGES)])
    return path


def _job() -> dg.JobDefinition:
    from archive_pipelines.definitions import defs

    return defs.resolve_job_def(import_warc_job.name)


def _run(instance: dg.DagsterInstance, paths: list[str]) -> dg.ExecuteInProcessResult:
    return _job().execute_in_process(instance=instance, raise_on_error=False, run_config={
        "ops": {"import_warc_op": {"config": {"paths": paths}}}})


def _metadata(event: dg.DagsterEvent) -> dict[str, Any]:
    return {key: value.value for key, value in
            event.event_specific_data.metadata.items()}  # type: ignore[union-attr]


def _found(data: Path, urls: list[str]) -> dict[str, int]:
    """How many captures `captures URL` finds for each URL."""
    with open_parts(data) as parts:
        found = {url: len(find_url(parts.catalog, url)[1]) for url in urls}
        parts.catalog.engine.dispose()
    return found


def _messages(instance: dg.DagsterInstance, result: dg.ExecuteInProcessResult) -> list[str]:
    return [entry.user_message for entry in instance.all_logs(result.run_id)]


def test_the_job_imports_a_warc_with_its_counts_as_metadata(
        data: Path, tmp_path: Path, dagster_instance: dg.DagsterInstance,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(warc_import, "RECORDS_PER_LOG", 2)  # progress lines from a small file
    warc = _good_warc(tmp_path / "given" / "site.warc.gz")
    result = _run(dagster_instance, [str(warc.parent)])  # a folder: the WARCs under it
    assert result.success
    [output] = [event for event in result.all_node_events if event.is_successful_output]
    metadata = _metadata(output)
    assert metadata["files"] == 1 and metadata["records"] == len(PAGES)
    assert metadata["captures"] == metadata["pages"] == metadata["new_bodies"] == len(PAGES)
    assert metadata["refused"] == metadata["broken_spans"] == 0
    assert metadata["problems"] == "none"
    assert result.output_for_node("import_warc_op") == [str(warc)]
    assert _found(data, [url for url, _ in PAGES]) == {url: 1 for url, _ in PAGES}
    messages = _messages(dagster_instance, result)
    assert any(m.startswith(f"file 1 of 1: {warc}") for m in messages)
    assert [m for m in messages if " records read (file " in m] == [
        "2 records read (file 1 of 1)", "4 records read (file 1 of 1)"]
    assert warc.exists()  # an original: left where it is

    again = _run(dagster_instance, [str(warc)])  # imported before: nothing twice
    assert again.success
    [output] = [event for event in again.all_node_events if event.is_successful_output]
    assert _metadata(output)["files_done_before"] == 1 and _metadata(output)["captures"] == 0
    assert _found(data, [PAGES[0][0]]) == {PAGES[0][0]: 1}


def test_a_hostile_file_fails_the_run_after_its_good_records_are_imported(
        data: Path, tmp_path: Path, dagster_instance: dg.DagsterInstance) -> None:
    hostile = wrong_payload_digest_warc(tmp_path / "hostile.warc.gz")
    result = _run(dagster_instance, [str(hostile.path)])
    assert not result.success
    [failure] = [event for event in result.all_node_events if event.is_failure]
    assert "1 record(s) refused" in str(failure.event_specific_data)
    assert any(str(hostile.path) in m and f"offset {hostile.bad_offset}" in m
               for m in _messages(dagster_instance, result))  # the problem, listed in the log
    good = [record.url for record in hostile.good]
    assert _found(data, good) == {url: 1 for url in good}


@pytest.mark.parametrize("path", ["missing.warc.gz", "empty-folder"])
def test_a_path_that_is_not_there_or_holds_nothing_fails_clearly(
        path: str, data: Path, dagster_instance: dg.DagsterInstance) -> None:
    (data / "empty-folder").mkdir()
    result = _run(dagster_instance, [path])  # relative: inside the data dir
    assert not result.success
    [failure] = [event for event in result.all_node_events if event.is_failure]
    assert f"nothing imported: {data / path}" in str(failure.event_specific_data)


def _tick(instance: dg.DagsterInstance, data: Path, cursor: str | None) -> dg.SensorResult:
    with dg.build_sensor_context(instance=instance, cursor=cursor, resources={
            "settings": SettingsResource(data_dir=str(data))}) as context:
        result = warc_inbox_sensor(context)
    assert isinstance(result, dg.SensorResult)
    return result


def _skipped(result: dg.SensorResult) -> str:
    return result.skip_reason.skip_message or "" if result.skip_reason else ""


@pytest.fixture
def inbox(data: Path) -> Iterator[Path]:
    """The default inbox, with a settle time short enough to wait for in a test."""
    (data / "archive.toml").write_text((data / "archive.toml").read_text().replace(
        "inbox_settle_seconds = 60.0", "inbox_settle_seconds = 1.0"))
    assert load_settings(data).imports.inbox_settle_seconds == 1.0
    folder = data / "inbox"
    folder.mkdir()
    yield folder


def test_the_inbox_sensor_asks_for_a_settled_file_once_and_its_run_imports_it(
        data: Path, inbox: Path, dagster_instance: dg.DagsterInstance) -> None:
    (inbox / "notes.txt").write_text("not a WARC")
    warc = _good_warc(inbox / "drop" / "site.warc.gz")
    first = _tick(dagster_instance, data, None)
    assert not first.run_requests  # just written: settling
    assert "1 settling" in _skipped(first)
    time.sleep(1.2)
    settled = _tick(dagster_instance, data, first.cursor)
    [request] = settled.run_requests or []
    stat = warc.stat()
    assert request.run_key == f"{warc}:{stat.st_size}:{stat.st_mtime_ns}"
    assert request.tags[LAUNCHED_BY] == "sensor:warc_inbox_sensor"
    assert not _tick(dagster_instance, data, settled.cursor).run_requests  # asked for already

    # Without the cursor the same file gives the same run key (Dagster drops the duplicate).
    forgotten = _tick(dagster_instance, data, None)
    time.sleep(1.2)
    [again] = _tick(dagster_instance, data, forgotten.cursor).run_requests or []
    assert again.run_key == request.run_key

    result = _job().execute_in_process(instance=dagster_instance, run_config=request.run_config)
    assert result.success
    assert _found(data, [PAGES[0][0]]) == {PAGES[0][0]: 1}
    assert warc.read_bytes() and warc.stat().st_mtime_ns == stat.st_mtime_ns  # left as it was

    with warc.open("ab") as handle:  # the file changed: a new version, asked for again
        handle.write(response_bytes(*page(20), index=20).data)
    changed = _tick(dagster_instance, data, settled.cursor)
    assert not changed.run_requests
    time.sleep(1.2)
    [newer] = _tick(dagster_instance, data, changed.cursor).run_requests or []
    assert newer.run_key != request.run_key


def test_the_inbox_sensor_is_off_by_default_and_says_when_there_is_no_inbox(
        data: Path, dagster_instance: dg.DagsterInstance) -> None:
    assert warc_inbox_sensor.default_status == dg.DefaultSensorStatus.STOPPED
    result = _tick(dagster_instance, data, None)
    assert not result.run_requests
    assert f"no inbox folder {data / 'inbox'}" in _skipped(result)
