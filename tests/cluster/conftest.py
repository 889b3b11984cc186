"""The cluster-profile fixture: a data dir initialized with `init --profile cluster` (Dagster's
storage and the catalog on PostgreSQL, Celery over Redis, compute logs on S3), some blobs in its
primary store, and dagster-daemon with two dagster-celery workers (alpha, beta) running.

A test file changes what its cluster holds or how it is set up by overriding `cluster_options`
(tests/helpers/cluster_setup.py's ClusterOptions): one cluster start per test."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from archive_pipelines.embedded_redis import LocalRedis
from archive_pipelines.settings import load_settings
from archive_pipelines.storage.assembly import open_storage
from archive_pipelines.storage.file_ingest import ingest_directory
from archive_testkit.cluster import WORKSPACE, cluster_env, start_daemon, start_worker, wait_for_workers
from archive_testkit.process_groups import ProcessGroups
from archive_testkit.servers import create_database
from tests.helpers.cluster_setup import ClusterOptions, add_legacy_days, blob_contents
from tests.helpers.replication import REPLICA_TOML
from tests.helpers.storage import add_snapshot, write_tree

BIN = Path(sys.executable).parent
WORKERS = ["alpha", "beta"]


def _add_blobs(data: Path, tmp_path: Path, options: ClusterOptions) -> list[str]:
    """`options.blobs` blobs in the primary store of the (initialized) data dir; their hashes."""
    storage = open_storage(load_settings(data, environ={}))
    try:
        sid = add_snapshot(storage)
        tree = {f"f{i}.txt": data for i, data in enumerate(blob_contents(options))}
        ingest_directory(storage.catalog, storage.primary, storage.views, work=storage.work,
                         snapshot_id=sid, extractor="wget", directory=write_tree(tmp_path / "src", tree))
        hashes = sorted(storage.primary.store.iter_hashes())
    finally:
        storage.close()
        storage.catalog.engine.dispose()
    return hashes


@pytest.fixture
def cluster_options() -> ClusterOptions:
    return ClusterOptions()


@pytest.fixture
def broker_url(tmp_path: Path) -> Iterator[str]:
    """Celery's broker and result backend: a redis-server of the cluster's own, so no task or
    unacknowledged message of an earlier cluster is left in it, and nothing is flushed on a
    server others use (REDIS_URL may name one)."""
    server = LocalRedis(tmp_path / "broker").start()
    try:
        yield server.url
    finally:
        server.stop()


@pytest.fixture
def cluster(tmp_path: Path, postgres_server_url: str, broker_url: str, s3_endpoint_url: str,
            s3_bucket: str, cluster_options: ClusterOptions,
            ) -> Iterator[tuple[Path, list[str], ProcessGroups]]:
    """The data dir (cluster profile), its blobs' hashes, and the daemon and two workers."""
    options = cluster_options
    data = tmp_path / "data"
    data.mkdir()
    catalog_url = create_database(postgres_server_url)  # the archive's catalog on PostgreSQL too
    (data / "archive.toml").write_text(f'[catalog]\nurl = "{catalog_url}"\n' + REPLICA_TOML)
    broker = broker_url
    init = subprocess.run(
        [str(BIN / "archive-pipelines"), "--data-dir", str(data), "init", "--profile", "cluster",
         "--instance-db", create_database(postgres_server_url), "--broker", broker,
         "--compute-logs", f"s3://{s3_bucket}/compute-logs", "--s3-endpoint", s3_endpoint_url,
         "--max-concurrent-runs", "4", "--visibility-timeout", str(options.visibility_timeout)],
        capture_output=True, text=True, env=cluster_env(data), timeout=120)
    assert init.returncode == 0, init.stdout + init.stderr
    assert "wrote dagster/dagster.yaml, wrote dagster/executor.yaml" in init.stdout
    hashes = _add_blobs(data, tmp_path, options)
    add_legacy_days(data, options.legacy_days)
    groups = ProcessGroups(tmp_path / "logs", env=cluster_env(data), cwd=WORKSPACE.parent)
    try:
        for name in WORKERS:
            start_worker(groups, data, name=name)
        for sensor in options.stopped_sensors:
            stopped = subprocess.run(
                [str(BIN / "dagster"), "sensor", "stop", sensor, "-w", str(WORKSPACE)],
                capture_output=True, text=True, env=cluster_env(data), cwd=WORKSPACE.parent,
                timeout=120)
            assert stopped.returncode == 0, stopped.stdout + stopped.stderr
        start_daemon(groups)
        wait_for_workers(data, WORKERS, groups=groups)
        yield data, hashes, groups
    finally:
        groups.stop()
