"""Replication fixtures: a data dir whose primary holds ingested blobs, plus real replicas
(a local zstd directory and a moto_server bucket); the helpers are in tests/helpers/replication.py."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from archive_pipelines.replication import ReplicaSet
from tests.helpers.replication import Env, local_replica, open_with_replicas, populate, s3_replica


@pytest.fixture
def env_local(data_dir: Path, tmp_path: Path) -> Iterator[Env]:
    """Primary (SQLite catalog) + a local zstd replica, primary populated."""
    storage = open_with_replicas(data_dir, [local_replica()])
    blobs = populate(storage, tmp_path)
    try:
        yield Env(storage, ReplicaSet.open(storage.catalog, storage.settings), blobs)
    finally:
        storage.close()
        storage.catalog.engine.dispose()


@pytest.fixture
def env_both(data_dir: Path, tmp_path: Path, s3_endpoint_url: str, s3_bucket: str
             ) -> Iterator[Env]:
    """Primary + local zstd replica + S3 (moto_server) replica, SQLite catalog."""
    storage = open_with_replicas(data_dir, [local_replica(), s3_replica(s3_endpoint_url, s3_bucket)])
    blobs = populate(storage, tmp_path)
    try:
        yield Env(storage, ReplicaSet.open(storage.catalog, storage.settings), blobs)
    finally:
        storage.close()
        storage.catalog.engine.dispose()


@pytest.fixture
def env_both_catalogs(data_dir: Path, tmp_path: Path, catalog_url: str, s3_endpoint_url: str,
                      s3_bucket: str) -> Iterator[Env]:
    """As env_both, on SQLite and on PostgreSQL."""
    storage = open_with_replicas(data_dir, [local_replica(), s3_replica(s3_endpoint_url, s3_bucket)],
                           catalog_url=catalog_url)
    blobs = populate(storage, tmp_path)
    try:
        yield Env(storage, ReplicaSet.open(storage.catalog, storage.settings), blobs)
    finally:
        storage.close()
        storage.catalog.engine.dispose()


