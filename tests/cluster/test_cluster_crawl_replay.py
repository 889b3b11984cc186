"""A crawl feeding `captures` and a replayed page on one cluster, with the blobs only on S3.

A cluster-profile data dir (Dagster's storage on PostgreSQL, steps on a dagster-celery
worker over Redis, compute logs on S3) whose catalog is on PostgreSQL and whose primary store
is an S3 bucket (moto), with no local blob store. `frontier-service run`, in the cluster's
environment, crawls the test web into the bucket (bodies and segments) and reports its
segments to the cluster's Dagster instance; dagster-daemon's `captures_sensor` launches the
day's `captures` run, whose steps a Celery worker executes; then `archive-pipelines replay`,
started on the data dir, answers a crawled page with the bytes the web served. No blob file
is on the local disk.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import dagster as dg
import pytest

from archive_pipelines.replay.timestamps import timestamp_of
from archive_pipelines.server_process import free_port
from archive_pipelines.settings import load_settings
from archive_testkit.cluster import WORKSPACE, cluster_env, start_daemon, start_worker, wait_for_workers
from archive_testkit.process_groups import ProcessGroups
from archive_testkit.testweb import TestWeb
from tests.frontier_service.service.web import SEEDS
from tests.helpers.cluster_runs import celery_workers, step_keys, wait_for_run
from tests.helpers.crawls import refetch, unique_crawl_name
from tests.helpers.replay import Answer, fetch
from tests.helpers.s3_cluster import init_s3_cluster
from tests.helpers.s3_crawls import bucket_keys, local_segments, run_cli

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(420)]

BIN = Path(sys.executable).parent
WORKER = "gamma"
SHA256_NAME = re.compile(r"[0-9a-f]{64}")


@pytest.fixture
def crawl_name(redis_url: str) -> Iterator[str]:
    with unique_crawl_name(redis_url, "cluster") as name:
        yield name


@pytest.fixture
def s3_cluster(tmp_path: Path, postgres_server_url: str, broker_url: str, s3_endpoint_url: str,
               s3_bucket: str) -> Iterator[tuple[Path, ProcessGroups]]:
    """A cluster-profile data dir whose catalog is on PostgreSQL and whose only blob store is
    the bucket, and its process groups (nothing started yet)."""
    data = tmp_path / "data"
    init_s3_cluster(data, postgres_server_url=postgres_server_url, broker=broker_url,
                    s3_endpoint_url=s3_endpoint_url, s3_bucket=s3_bucket)
    groups = ProcessGroups(tmp_path / "logs", env=cluster_env(data), cwd=WORKSPACE.parent)
    try:
        yield data, groups
    finally:
        groups.stop()


def test_a_crawl_feeds_captures_on_a_celery_worker_and_replays_from_s3(
        s3_cluster: tuple[Path, ProcessGroups], captures_web: TestWeb, redis_url: str,
        s3_endpoint_url: str, s3_bucket: str, crawl_name: str) -> None:
    data, groups = s3_cluster
    settings = load_settings(data, environ={})
    assert [store.kind for store in settings.stores] == ["s3"]  # no local blob store
    report = _crawl(data, web=captures_web, redis_url=redis_url, crawl_name=crawl_name)
    assert report["segments"] >= 2 and report["pages"] > 20, report

    start_worker(groups, data, name=WORKER)
    start_daemon(groups)
    [node] = wait_for_workers(data, [WORKER], groups=groups)
    with dg.DagsterInstance.from_config(str(data / "dagster")) as instance:
        assert type(instance.run_storage).__name__ == "PostgresRunStorage"
        run = wait_for_run(instance, "captures_job", groups=groups, timeout=240)
        assert run.status == dg.DagsterRunStatus.SUCCESS, run.run_id
        assert run.tags["captures/trigger"] == "crawl_segments", run.tags
        # Every step of the run (the asset and its checks) went to the Celery worker.
        steps = step_keys(instance, run.run_id)
        assert "captures" in steps, steps
        assert celery_workers(instance, run.run_id) == [node] * len(steps)
        [materialization] = instance.fetch_materializations(
            dg.AssetKey("captures"), limit=1).records
        metadata = materialization.asset_materialization.metadata  # type: ignore[union-attr]
        assert metadata["run_segments_ingested"].value == report["segments"], metadata

    # The replay server, started on the data dir, answers a crawled page with its bytes.
    page = SEEDS[0]
    found = json.loads(_cli(data, "captures", page, "--json"))["captures"]
    fetched_ms = next(c["fetched_ms"] for c in found if c["status_code"] == 200)
    port = free_port()
    groups.spawn("replay", [str(BIN / "archive-pipelines"), "--data-dir", str(data), "replay",
                            "--port", str(port)])
    answer = _replayed(port, f"/web/{timestamp_of(fetched_ms)}id_/{page}", groups=groups)
    host = urlsplit(page).hostname or ""
    assert (answer.status, answer.body) == refetch(captures_web.port, host, "/")

    # The blobs are in the bucket only: no blob file, and no segment, on the local disk.
    assert local_segments(data) == []
    blob_files = [p for p in data.rglob("*") if p.is_file() and SHA256_NAME.match(p.name)]
    assert blob_files == [] and not any(p.is_file() for p in (data / "cas").rglob("*"))
    bodies = [key for key in bucket_keys(s3_endpoint_url, s3_bucket, "archive")
              if "/sha256/" in key]
    assert len(bodies) >= report["pages"] // 2, len(bodies)


def _crawl(data: Path, *, web: TestWeb, redis_url: str, crawl_name: str) -> dict:
    """`frontier-service run` of two seeds of the test web, one link deep, as the cluster's
    crawler runs it (its environment: the data dir, DAGSTER_HOME, to which it reports its
    segments as `crawl_segments` events); its JSON summary."""
    args = [str(BIN / "frontier-service"), "--data-dir", str(data), "--redis-url", redis_url,
            "--crawl-name", crawl_name, "run", *(f"--seed={seed}" for seed in SEEDS[:2]),
            "--host-map", f"*.test=127.0.0.1:{web.port}", "--allow-network", "127.0.0.0/8",
            "--allowed-domain", "*.test", "--max-depth", "1", "--segment-pages", "10",
            "--min-delay", "0.05", "--concurrency", "16", "--exit-when-idle", "1",
            "--metrics-port", "-1", "--loop", "asyncio"]
    done = subprocess.run(args, capture_output=True, text=True, env=cluster_env(data),
                          cwd=WORKSPACE.parent, timeout=180)
    assert done.returncode == 0, done.stderr[-3000:]
    summary: dict = json.loads(done.stdout.strip().splitlines()[-1])
    assert summary["stopped"] == "frontier exhausted", summary
    return summary


def _cli(data: Path, *args: str) -> str:
    done = run_cli(data, *args)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def _replayed(port: int, path: str, *, groups: ProcessGroups, timeout: float = 60.0) -> Answer:
    """The replay server's answer to `path`, once it listens."""
    deadline = time.monotonic() + timeout
    while True:
        groups.check_alive()
        try:
            return fetch(port, path)
        except ConnectionRefusedError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.3)
