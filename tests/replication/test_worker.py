"""The worker against real stores: a local zstd replica and a moto_server bucket."""

from __future__ import annotations

import threading
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import zstandard
from sqlalchemy import select, update

from archive_pipelines.blobstore import LocalBlobStore
from archive_pipelines.catalog.models import Blob, utcnow
from archive_pipelines.replication import ReplicaSet, ReplicationFailed, archive_batch
from tests.blobstore.stored_objects import write_stored
from tests.helpers.replication import (
    MAX_AGE,
    Env,
    assert_statuses_truthful,
    assert_store_sound,
    flip_byte,
    listing,
    local_replica,
    open_with_replicas,
    populate,
    present_at,
    replicate_all,
    s3_replica,
    statuses,
)


@pytest.mark.parametrize("retention", [2, 3])
def test_from_one_copy_to_the_policy(env_both_catalogs: Env, retention: int) -> None:
    env = env_both_catalogs
    report = replicate_all(env, retention=retention)
    assert report.ok and report.errors == []
    everything = set(env.blobs)
    counts = {name: len(present_at(env.storage, name)) for name in ("primary", "local", "s3")}
    assert counts["primary"] == len(everything)
    # retention 2: each blob gets exactly one more copy, on one replica or the other.
    assert counts["local"] + counts["s3"] == len(everything) * (retention - 1)
    assert sum(report.created.values()) == len(everything) * (retention - 1)
    assert sum(report.bytes_copied.values()) == (retention - 1) * sum(
        len(data) for data in env.blobs.values())
    for name in ("local", "s3"):
        store = env.replicas[name].require()
        assert listing(store) == present_at(env.storage, name)
        for digest in listing(store):
            with store.open(digest) as reader:
                assert reader.read() == env.blobs[digest]
    assert_statuses_truthful(env)
    # A second pass finds nothing to do.
    again = replicate_all(env, retention=retention)
    assert again.requested == 0


def test_a_corrupt_source_is_marked_and_never_copied(env_both: Env) -> None:
    env = env_both
    victim = next(h for h, data in env.blobs.items() if len(data) > 1000)
    flip_byte(env.storage.primary.store.local_path(victim), 10)  # the alias shares the inode
    report = replicate_all(env, retention=2)
    assert report.ok  # a corrupt source is reported, not a failed run
    assert statuses(env.storage)[("primary", victim)] == "corrupted"
    assert report.corrupted_found == {"primary": 1}
    assert any(victim in line and "corrupted" in line for line in report.errors)
    for name in ("local", "s3"):
        assert victim not in listing(env.replicas[name].require())
        assert (name, victim) not in statuses(env.storage)
    assert present_at(env.storage, "local") | present_at(env.storage, "s3") == set(
        env.blobs) - {victim}


@pytest.mark.unit
def test_a_missing_source_is_marked_missing(env_local: Env) -> None:
    env = env_local
    victim = next(h for h, data in env.blobs.items() if data)
    env.storage.primary.store.local_path(victim).unlink()
    report = replicate_all(env, retention=2)
    assert statuses(env.storage)[("primary", victim)] == "missing"
    assert report.missing_found == {"primary": 1}
    assert victim not in listing(env.replicas["local"].require())
    assert present_at(env.storage, "local") == set(env.blobs) - {victim}


@pytest.mark.unit
def test_a_fresh_ongoing_copy_counts_and_a_stale_one_is_redone(env_local: Env) -> None:
    env = env_local
    fresh, stale = sorted(env.blobs)[:2]
    local_id = env.replicas["local"].store_id
    fresh_id, stale_id = _blob_id(env, fresh), _blob_id(env, stale)
    with env.storage.catalog.transaction() as tx:
        tx.copies.upsert_copies(store_id=local_id, blob_ids=[fresh_id], status="ongoing",
                      mtime=utcnow() - timedelta(minutes=5))
        tx.copies.upsert_copies(store_id=local_id, blob_ids=[stale_id], status="ongoing",
                      mtime=utcnow() - timedelta(minutes=90))
    replicate_all(env, retention=2, max_age=MAX_AGE)
    store = env.replicas["local"].require()
    assert fresh not in listing(store)  # presumed in flight elsewhere: not copied twice
    assert statuses(env.storage)[("local", fresh)] == "ongoing"
    assert stale in listing(store) and statuses(env.storage)[("local", stale)] == "present"
    # Once it too is older than max age, it is redone.
    replicate_all(env, retention=2, max_age=timedelta(minutes=1))
    assert statuses(env.storage)[("local", fresh)] == "present"


def test_two_workers_on_the_same_batch(env_both: Env) -> None:
    env = env_both
    batch = sorted(env.blobs)
    barrier = threading.Barrier(2)
    errors: list[BaseException] = []

    def work() -> None:
        # each worker opens its own stores
        replicas = ReplicaSet.open(env.storage.catalog, env.storage.settings)
        barrier.wait()
        try:
            archive_batch(env.storage.catalog, replicas, batch, retention=3, max_age=MAX_AGE, width=4)
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    workers = [threading.Thread(target=work) for _ in range(2)]
    for thread in workers:
        thread.start()
    for thread in workers:
        thread.join()
    assert errors == []
    for name in ("local", "s3"):
        store = env.replicas[name].require()
        assert listing(store) == set(env.blobs)
        assert_store_sound(store)
        assert present_at(env.storage, name) == set(env.blobs)
    assert_statuses_truthful(env)


@pytest.mark.unit
def test_a_zstd_bomb_at_a_replica_source_is_refused(env_local: Env) -> None:
    env = env_local
    victim = next(h for h, data in env.blobs.items() if 0 < len(data) < 1000)
    # The replica "holds" the blob, but its object inflates to 64 MiB of zeros.
    bomb = zstandard.ZstdCompressor(level=19).compress(bytes(64 << 20))
    write_stored(env.replicas["local"].require(), victim, bomb)
    victim_id = _blob_id(env, victim)
    env.storage.primary.store.local_path(victim).unlink()  # the bomb is the only source left
    with env.storage.catalog.transaction() as tx:
        tx.copies.upsert_copies(store_id=env.replicas["local"].store_id, blob_ids=[victim_id],
                      status="present", mtime=utcnow())
        tx.copies.upsert_copies(store_id=env.replicas["primary"].store_id, blob_ids=[victim_id],
                      status="missing", mtime=utcnow())
    report = archive_batch(env.storage.catalog, env.replicas, [victim], retention=2, max_age=MAX_AGE,
                           width=2)
    assert statuses(env.storage)[("local", victim)] == "corrupted"
    assert report.corrupted_found == {"local": 1}
    assert "decompressed beyond" in " ".join(report.errors)
    assert not env.storage.primary.store.local_path(victim).exists()  # nothing copied from it


def test_a_read_only_replica_is_a_clear_error_and_the_other_store_gets_its_copies(
        data_dir: Path, tmp_path: Path, read_only_dir: Path, s3_endpoint_url: str,
        s3_bucket: str) -> None:
    storage = open_with_replicas(data_dir, [local_replica(path=str(read_only_dir)),
                                      s3_replica(s3_endpoint_url, s3_bucket)])
    try:
        blobs = populate(storage, tmp_path)
        env = Env(storage, ReplicaSet.open(storage.catalog, storage.settings), blobs)
        assert not env.replicas["local"].writable and env.replicas["local"].readable
        report = replicate_all(env, retention=2)
        problem = report.store_problems["local"]  # reported once, for the store
        assert problem.startswith("store 'local': cannot write under")
        assert str(read_only_dir) in problem and "\n" not in problem
        assert all("\n" not in line for line in report.errors)
        assert present_at(storage, "s3") == set(blobs)
        assert list(read_only_dir.iterdir()) == []
    finally:
        storage.close()
        storage.catalog.engine.dispose()


@pytest.mark.parametrize("problem", ["bucket", "credentials"])
def test_a_misconfigured_bucket_leaves_the_other_store_working(
        data_dir: Path, tmp_path: Path, s3_endpoint_url: str, s3_bucket: str,
        monkeypatch: pytest.MonkeyPatch, problem: str) -> None:
    bucket = "no-such-bucket" if problem == "bucket" else s3_bucket
    storage = open_with_replicas(data_dir, [local_replica(), s3_replica(s3_endpoint_url, bucket)])
    try:
        blobs = populate(storage, tmp_path)
        if problem == "credentials":
            for var in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
                monkeypatch.delenv(var)
            monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
            monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
            monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
        env = Env(storage, ReplicaSet.open(storage.catalog, storage.settings), blobs)
        s3 = env.replicas["s3"]
        assert not s3.readable and not s3.writable
        expected = "does not exist" if problem == "bucket" else "no usable AWS credentials"
        assert s3.error is not None and expected in s3.error
        report = replicate_all(env, retention=2)
        assert report.ok
        assert present_at(storage, "local") == set(blobs)
        assert list(report.store_problems) == ["s3"]  # reported once, for the store
        problem = report.store_problems["s3"]
        assert problem.startswith("store 's3': ") and "\n" not in problem
        assert "testing" not in problem  # no credentials echoed
    finally:
        storage.close()
        storage.catalog.engine.dispose()


@pytest.mark.unit
def test_a_corrupt_object_at_the_destination_is_left_alone(env_local: Env) -> None:
    env = env_local
    victim = next(h for h, data in env.blobs.items() if len(data) > 1000)
    store = env.replicas["local"].require()
    write_stored(store, victim, b"not the blob")
    with pytest.raises(ReplicationFailed) as raised:
        archive_batch(env.storage.catalog, env.replicas, sorted(env.blobs), retention=2,
                      max_age=MAX_AGE, width=4)
    report = raised.value.report
    assert report.failures == 1 and "left in place" in str(raised.value)
    assert statuses(env.storage)[("local", victim)] == "corrupted"
    assert report.copies["local"] == len(env.blobs) - 1  # the rest went on
    # Replication never overwrites it, and stops trying once it is recorded corrupted.
    again = archive_batch(env.storage.catalog, env.replicas, [victim], retention=2, max_age=MAX_AGE,
                          width=1)
    assert again.ok and again.unplaceable == 1
    assert store.check(victim).status == "corrupt"


@pytest.mark.unit
def test_garbage_is_not_replicated(env_local: Env) -> None:
    env = env_local
    garbage = sorted(env.blobs)[0]
    with env.storage.catalog.transaction() as tx:
        tx.session.execute(update(Blob).where(Blob.sha256 == garbage).values(ref_count=0))
    replicate_all(env, retention=2)
    assert garbage not in listing(env.replicas["local"].require())
    report = archive_batch(env.storage.catalog, env.replicas, [garbage], retention=2, max_age=MAX_AGE,
                           width=1)
    assert report.skipped == 1 and report.planned == 0


def _blob_id(env: Env, digest: str) -> int:
    with env.storage.catalog.reading() as tx:
        return int(tx.session.scalars(select(Blob.id).where(Blob.sha256 == digest)).one())


@pytest.mark.unit
def test_each_small_source_object_is_read_once(env_local: Env,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """The source check keeps a small blob's verified bytes and the copy writes those."""
    env = env_local
    store_class = type(env.storage.primary.store)  # the replica set opens its own store objects
    opened: list[str] = []  # the raw primary's check reads its file itself (no open())
    for method in ("open", "check"):
        real = getattr(store_class, method)

        def counting(self: LocalBlobStore, sha256: str, *args: object, _real: Any = real,
                     **kwargs: object) -> object:
            if self.name == "primary":
                opened.append(sha256)
            return _real(self, sha256, *args, **kwargs)
        monkeypatch.setattr(store_class, method, counting)
    report = replicate_all(env, retention=2)
    assert report.ok and sum(report.created.values()) == len(env.blobs)
    small = {digest for digest, data in env.blobs.items() if len(data) <= 64 << 10}
    assert small and sorted(d for d in opened if d in small) == sorted(small)
    assert_statuses_truthful(env)
