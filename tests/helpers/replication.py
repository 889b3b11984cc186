"""Helpers for the replication tests: a data dir with replicas, a populated primary, the
Dagster resources on it, and ways to inspect every store and run replication until it settles."""

from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

from sqlalchemy import select

from archive_pipelines.blobstore import BlobStore
from archive_pipelines.catalog.models import Blob, BlobCopy, Store
from archive_pipelines.datadir import initialize
from archive_pipelines.replication import ReplicaSet, archive_batch, plan_batches
from archive_pipelines.replication.report import BatchReport
from archive_pipelines.resources import CatalogResource, SettingsResource
from archive_pipelines.resources.replication import ReplicationResource
from archive_pipelines.settings import (
    CatalogSettings,
    ReplicationSettings,
    Settings,
    StoreSettings,
    load_settings,
)
from archive_pipelines.storage.assembly import StorageParts, open_storage
from archive_pipelines.storage.file_ingest import ingest_directory
from tests.helpers.storage import add_snapshot, sha, write_tree

PRIMARY = StoreSettings(name="primary", kind="local", path="cas", codec="raw")
MAX_AGE = timedelta(minutes=60)


def local_replica(name: str = "local", path: str | None = None) -> StoreSettings:
    return StoreSettings(name=name, kind="local", path=path or f"replicas/{name}", codec="zstd")


def s3_replica(endpoint: str, bucket: str, name: str = "s3") -> StoreSettings:
    return StoreSettings(name=name, kind="s3", bucket=bucket, endpoint_url=endpoint,
                         prefix="archive", codec="zstd")


def open_with_replicas(data_dir: Path, replicas: list[StoreSettings], catalog_url: str = "",
                       retention: int = 2) -> StorageParts:
    settings = Settings(data_dir=data_dir, catalog=CatalogSettings(url=catalog_url),
                        stores=[PRIMARY, *replicas],
                        replication=ReplicationSettings(retention=retention, copier_width=4))
    initialize(settings)
    return open_storage(settings)


def corpus(count: int = 12, *, seed: str = "blob") -> dict[str, bytes]:
    """Files of assorted sizes: empty, tiny, compressible, and one spanning several chunks."""
    files: dict[str, bytes] = {"empty.txt": b""}
    for i in range(count - 2):
        files[f"f{i:03d}.html"] = f"<p>{seed} {i}</p>".encode() * (1 + i * 37)
    files["big.bin"] = os.urandom(2_500_000)  # > two 1 MiB streaming chunks
    return files


def populate(storage: StorageParts, tmp_path: Path, files: dict[str, bytes] | None = None,
             name: str = "src", timestamp: str = "1735142400.1") -> dict[str, bytes]:
    """Ingest `files` into the primary store; returns {sha256: bytes}."""
    files = corpus() if files is None else files
    sid = add_snapshot(storage, url=f"https://example.com/{name}", timestamp=timestamp)
    report = ingest_directory(storage.catalog, storage.primary, storage.views, work=storage.work,
                              snapshot_id=sid, extractor="wget", directory=write_tree(tmp_path / name, files))
    assert not report.errors, report.errors
    return {sha(data): data for data in files.values()}


@dataclass
class Env:
    storage: StorageParts
    replicas: ReplicaSet
    blobs: dict[str, bytes]

    def reopen(self) -> ReplicaSet:
        self.replicas = ReplicaSet.open(self.storage.catalog, self.storage.settings)
        return self.replicas


def statuses(storage: StorageParts) -> dict[tuple[str, str], str]:
    """{(store name, sha256): status} for every blob_copy row."""
    with storage.catalog.reading() as tx:
        rows = tx.session.execute(
            select(Store.name, Blob.sha256, BlobCopy.status)
            .join(Blob, Blob.id == BlobCopy.blob_id).join(Store, Store.id == BlobCopy.store_id))
        return {(name, digest): status for name, digest, status in rows}


def present_at(storage: StorageParts, store: str) -> set[str]:
    return {h for (name, h), status in statuses(storage).items()
            if name == store and status == "present"}


def listing(store: BlobStore) -> set[str]:
    return set(store.iter_hashes())


def assert_store_sound(store: BlobStore) -> None:
    """Every object a listing shows rehashes to its name (nothing partial is visible)."""
    for digest in store.iter_hashes():
        result = store.check(digest)
        assert result.ok, f"{store.name}: {digest} {result.status} {result.detail}"


def assert_statuses_truthful(env: Env) -> None:
    """Every copy recorded present is there and intact."""
    for (name, digest), status in statuses(env.storage).items():
        if status == "present":
            result = env.replicas[name].require().check(digest)
            assert result.ok, f"{name}: {digest} recorded present but {result.status}"


def replicate_all(env: Env, *, retention: int, max_age: timedelta = MAX_AGE, width: int = 4,
                  batch_size: int = 50, raise_on_failure: bool = True) -> BatchReport:
    """Director ticks + worker runs over the whole catalog until a full cycle of ticks
    changes nothing (blobs with no good copy left stay under-replicated for ever)."""
    total = BatchReport()
    cursor = 0
    cycle = BatchReport()
    for _ in range(100):
        tick = plan_batches(env.storage.catalog, env.replicas, retention=retention, max_age=max_age,
                            batch_size=batch_size, cursor=cursor, max_batches=10)
        for batch in tick.batches:
            cycle.add(archive_batch(env.storage.catalog, env.replicas, batch, retention=retention,
                                      max_age=max_age, width=width,
                                      raise_on_failure=raise_on_failure))
        cursor = tick.next_cursor
        if tick.wrapped:
            total.add(cycle)
            if not (cycle.copies or cycle.corrupted_found or cycle.missing_found):
                return total
            cycle = BatchReport()
    raise AssertionError("replication did not converge in 100 ticks")


def flip_byte(path: Path, offset: int = 0) -> None:
    """Damage a stored file in place (stored blobs are 0444: make it writable first)."""
    path.chmod(0o644)
    with open(path, "r+b") as handle:
        handle.seek(offset)
        byte = handle.read(1)
        handle.seek(offset)
        handle.write(bytes([(byte[0] if byte else 0) ^ 0xFF]))


REPLICA_TOML = """
[replication]
retention = 2
batch_size = 2

[[stores]]
name = "primary"
path = "cas"
codec = "raw"

[[stores]]
name = "replica1"
path = "replicas/replica1"
codec = "zstd"
"""


def replicated_data_dir(tmp_path: Path, *, files: int = 5) -> tuple[Path, list[str]]:
    """A data dir with a replica store and `files` small distinct blobs in the primary;
    returns it and the blobs' hashes."""
    data = tmp_path / "data"
    data.mkdir()
    (data / "archive.toml").write_text(REPLICA_TOML)
    settings = load_settings(data, environ={})
    initialize(settings)
    storage = open_storage(settings)
    sid = add_snapshot(storage)
    tree = {f"f{i}.txt": f"blob {i}".encode() * 50 for i in range(files)}
    ingest_directory(storage.catalog, storage.primary, storage.views, work=storage.work,
                     snapshot_id=sid, extractor="wget", directory=write_tree(tmp_path / "src", tree))
    storage.close()
    storage.catalog.engine.dispose()
    return data, sorted(storage.primary.store.iter_hashes())


def replication_resources(data: Path) -> dict[str, object]:
    settings = SettingsResource(data_dir=str(data))
    catalog = CatalogResource(settings=settings)
    return {"settings": settings, "catalog": catalog,
            "replication": ReplicationResource(catalog=catalog)}


def replica_files(data: Path) -> set[str]:
    return {p.name for p in (data / "replicas" / "replica1").rglob("*.zst")}
