"""The cluster-profile fixture: a data dir initialized with `init --profile cluster` (Dagster's
storage and the catalog on PostgreSQL, Celery over Redis, compute logs on S3), some blobs in its
primary store, and dagster-daemon with two dagster-celery workers (alpha, beta) running."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from archive_pipelines.settings import load_settings
from archive_pipelines.storage.assembly import open_storage
from archive_pipelines.storage.file_ingest import ingest_directory
from archive_testkit.cluster import WORKSPACE, cluster_env, start_daemon, start_worker, wait_for_workers
from archive_testkit.process_groups import ProcessGroups
from archive_testkit.servers import create_database
from tests.helpers.replication import REPLICA_TOML
from tests.helpers.storage import add_snapshot, write_tree

BIN = Path(sys.executable).parent
WORKERS = ["alpha", "beta"]
BLOBS = 40  # spread over ~34 prefixes: the backfill's prefixes each hold some


def _add_blobs(data: Path, tmp_path: Path) -> list[str]:
    """BLOBS blobs in the primary store of the (initialized) data dir; their hashes."""
    storage = open_storage(load_settings(data, environ={}))
    try:
        sid = add_snapshot(storage)
        tree = {f"f{i}.txt": f"cluster blob {i}".encode() * 40 for i in range(BLOBS)}
        ingest_directory(storage.catalog, storage.primary, storage.views, work=storage.work,
                         snapshot_id=sid, extractor="wget", directory=write_tree(tmp_path / "src", tree))
        hashes = sorted(storage.primary.store.iter_hashes())
    finally:
        storage.close()
        storage.catalog.engine.dispose()
    return hashes


@pytest.fixture
def cluster(tmp_path: Path, postgres_server_url: str, redis_url: str, s3_endpoint_url: str,
            s3_bucket: str) -> Iterator[tuple[Path, list[str], ProcessGroups]]:
    """The data dir (cluster profile), its blobs' hashes, and the daemon and two workers."""
    data = tmp_path / "data"
    data.mkdir()
    catalog_url = create_database(postgres_server_url)  # the archive's catalog on PostgreSQL too
    (data / "archive.toml").write_text(f'[catalog]\nurl = "{catalog_url}"\n' + REPLICA_TOML)
    broker = redis_url.rsplit("/", 1)[0] + "/7"  # a database of its own on the shared server
    init = subprocess.run(
        [str(BIN / "archive-pipelines"), "--data-dir", str(data), "init", "--profile", "cluster",
         "--instance-db", create_database(postgres_server_url), "--broker", broker,
         "--compute-logs", f"s3://{s3_bucket}/compute-logs", "--s3-endpoint", s3_endpoint_url,
         "--max-concurrent-runs", "4", "--visibility-timeout", "300"],
        capture_output=True, text=True, env=cluster_env(data), timeout=120)
    assert init.returncode == 0, init.stdout + init.stderr
    assert "wrote dagster/dagster.yaml, wrote dagster/executor.yaml" in init.stdout
    hashes = _add_blobs(data, tmp_path)
    groups = ProcessGroups(tmp_path / "logs", env=cluster_env(data), cwd=WORKSPACE.parent)
    try:
        for name in WORKERS:
            start_worker(groups, data, name=name)
        start_daemon(groups)
        wait_for_workers(data, WORKERS, groups=groups)
        yield data, hashes, groups
    finally:
        groups.stop()
