"""Outages as people meet them: `replicate` and the director job against a replica that is
unreachable or silent, with the catalog on PostgreSQL (the bigger configuration).

Both end (no wall-clock bound is asserted: they return), report the store once, print or
attach the per-store summary, and fail: exit 1, or a failed Dagster run.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import dagster as dg
import pytest

from archive_pipelines.ops.replication_jobs import archive_batch_job, archive_director_job
from archive_pipelines.resources import CatalogResource, SettingsResource
from archive_pipelines.resources.replication import ReplicationResource
from archive_pipelines.sensors.director import archival_director_sensor
from archive_testkit.servers.faulty_http import SilentServer, closed_port_url
from tests.helpers.cli import run_cli

pytestmark = pytest.mark.faults  # the fault-injection suite (issue 18): pytest -m faults

FAST_S3 = {"ARCHIVE_S3_CONNECT_TIMEOUT": "1", "ARCHIVE_S3_READ_TIMEOUT": "0.5",
           "AWS_MAX_ATTEMPTS": "2", "AWS_ACCESS_KEY_ID": "testing",
           "AWS_SECRET_ACCESS_KEY": "testing", "AWS_DEFAULT_REGION": "us-east-1"}
PAGES = 3


def _data_dir(tmp_path: Path, catalog_url: str, endpoint: str) -> Path:
    """primary (local) + s3r (zstd, at `endpoint`), retention 2, PAGES pages ingested."""
    data = tmp_path / "data"
    data.mkdir()
    (data / "archive.toml").write_text(
        f'[catalog]\nurl = "{catalog_url}"\n[replication]\nretention = 2\n'
        '[[stores]]\nname = "primary"\npath = "cas"\ncodec = "raw"\n'
        f'[[stores]]\nname = "s3r"\nkind = "s3"\nbucket = "archive"\nendpoint_url = "{endpoint}"\n'
        'codec = "zstd"\n')
    assert run_cli("--data-dir", str(data), "init").returncode == 0
    site = tmp_path / "site"
    site.mkdir()
    for i in range(PAGES):
        (site / f"{i}.html").write_text(f"page {i}" * 100)
    done = run_cli("--data-dir", str(data), "ingest", "--url", "https://a.test/", "wget",
                   str(site))
    assert done.returncode == 0, done.stderr
    return data


@pytest.fixture
def silent_endpoint() -> Iterator[str]:
    with SilentServer() as silent:
        yield silent.url


@pytest.mark.parametrize("endpoint", ["closed", "silent"])
def test_replicate_ends_reports_the_store_once_and_exits_1(
        tmp_path: Path, postgres_url: str, endpoint: str, request: pytest.FixtureRequest
        ) -> None:
    url = closed_port_url() if endpoint == "closed" else request.getfixturevalue(
        "silent_endpoint")
    data = _data_dir(tmp_path, postgres_url, url)
    done = run_cli("--data-dir", str(data), "replicate", env=FAST_S3)
    assert done.returncode == 1, done.stderr
    problems = [line for line in done.stderr.splitlines() if "s3r" in line]
    why = "cannot reach the S3 endpoint" if endpoint == "closed" else "did not answer in time"
    assert len(problems) == 1 and problems[0].startswith("  ! store 's3r': ")
    assert why in problems[0] and "gave up after 2 attempts" in problems[0]
    lines = done.stdout.splitlines()
    assert lines[0].startswith("0 copies made")
    assert any(line.split()[0] == "s3r" and f"0 made, 0 already there, 0 failed, "
               f"{PAGES} skipped" in line for line in lines)
    assert lines[-1].startswith(f"policy NOT met: {PAGES} blob(s) still short") and \
        "stores out: s3r" in lines[-1]

    limited = run_cli("--data-dir", str(data), "replicate", "--max-batches", "10", env=FAST_S3)
    assert limited.returncode == 1 and "policy NOT met" in limited.stdout


def _resources(data: Path) -> dict[str, object]:
    settings = SettingsResource(data_dir=str(data))
    catalog = CatalogResource(settings=settings)
    return {"settings": settings, "catalog": catalog,
            "replication": ReplicationResource(catalog=catalog)}


def _failure(run: dg.ExecuteInProcessResult) -> dg.Failure:
    assert not run.success
    [failure] = [e for e in run.all_events if e.event_type == dg.DagsterEventType.STEP_FAILURE]
    info = failure.step_failure_data.user_failure_data
    assert info is not None
    return info  # type: ignore[return-value]


def test_the_director_job_fails_with_the_summary(
        tmp_path: Path, postgres_url: str, dagster_instance: dg.DagsterInstance,
        monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in FAST_S3.items():
        monkeypatch.setenv(name, value)
    data = _data_dir(tmp_path, postgres_url, closed_port_url())
    run = archive_director_job.execute_in_process(resources=_resources(data),
                                                  instance=dagster_instance,
                                                  raise_on_error=False)
    info = _failure(run)
    assert info.description is not None
    assert info.description.startswith(f"policy NOT met: {PAGES} blob(s) still short")
    assert info.metadata["blobs_short"].value == PAGES
    assert info.metadata["policy_met"].value is False
    stores = info.metadata["stores"].value
    assert stores["s3r"]["skipped"] == PAGES and "cannot reach" in stores["s3r"]["problem"]


def test_a_worker_run_fails_when_its_batch_stays_short(
        tmp_path: Path, postgres_url: str, dagster_instance: dg.DagsterInstance,
        monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in FAST_S3.items():
        monkeypatch.setenv(name, value)
    data = _data_dir(tmp_path, postgres_url, closed_port_url())
    hashes = sorted(p.name for p in (data / "cas" / "sha256").rglob("*")
                    if p.is_file() and len(p.name) == 64)
    assert len(hashes) == PAGES
    run = archive_batch_job.execute_in_process(
        resources=_resources(data), instance=dagster_instance, raise_on_error=False,
        run_config={"ops": {"archive_batch_op": {"config": {"sha256s": hashes}}}})
    info = _failure(run)
    assert info.metadata["blobs_short"].value == PAGES
    assert info.metadata["stores"].value["s3r"]["skipped"] == PAGES


def test_the_director_sensor_plans_without_waiting_on_a_silent_store(
        tmp_path: Path, postgres_url: str, dagster_instance: dg.DagsterInstance,
        monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in FAST_S3.items():
        monkeypatch.setenv(name, value)
    with SilentServer() as silent:
        data = _data_dir(tmp_path, postgres_url, silent.url)
        with dg.build_sensor_context(instance=dagster_instance, cursor=None,
                                     resources=_resources(data)) as context:
            result = archival_director_sensor(context)
        assert silent.connections == 0  # planning reads the catalog only
    assert isinstance(result, dg.SensorResult) and len(result.run_requests or []) == 1
