"""Scrub finds rot and loss at rest; the director then re-replicates; nothing is deleted."""

from __future__ import annotations

import boto3
import pytest

from archive_pipelines.blobstore import LocalBlobStore, S3BlobStore
from archive_pipelines.replication import ScrubReport, replication_status, scrub_store
from archive_pipelines.replication.stores import ReplicaSet
from archive_pipelines.storage.assembly import StorageParts
from tests.replication.conftest import (
    Env,
    assert_statuses_truthful,
    flip_byte,
    listing,
    present_at,
    replicate_all,
    statuses,
)


def scrub_by_prefix(storage: StorageParts, replicas: ReplicaSet, store: str) -> ScrubReport:
    """All 256 hash-prefix partitions, each paged with a small limit."""
    total = ScrubReport(store)
    for first in range(256):
        cursor: str | None = None
        while True:
            part = scrub_store(storage.catalog, replicas, store, prefix=f"{first:02x}", cursor=cursor,
                               limit=2)
            for name in ("checked", "corrupted", "missing", "restored"):
                setattr(total, name, getattr(total, name) + getattr(part, name))
            total.problems += part.problems
            cursor = part.next_cursor
            if cursor is None:
                break
    return total


def scrub_by_cursor(storage: StorageParts, replicas: ReplicaSet, store: str) -> ScrubReport:
    total = ScrubReport(store)
    cursor: str | None = None
    while True:
        part = scrub_store(storage.catalog, replicas, store, cursor=cursor, limit=5)
        for name in ("checked", "corrupted", "missing", "restored"):
            setattr(total, name, getattr(total, name) + getattr(part, name))
        total.problems += part.problems
        cursor = part.next_cursor
        if cursor is None:
            return total


def test_scrub_finds_damage_and_replication_repairs_without_deleting(env_both: Env) -> None:
    env = env_both
    replicate_all(env, retention=3)
    local = env.replicas["local"].require()
    s3 = env.replicas["s3"].require()
    assert isinstance(local, LocalBlobStore) and isinstance(s3, S3BlobStore)
    before = {"local": listing(local), "s3": listing(s3)}
    assert before["local"] == before["s3"] == set(env.blobs)
    rotten, lost = sorted(h for h, data in env.blobs.items() if len(data) > 100)[:2]

    flip_byte(local.local_path(rotten), 20)
    boto3.client("s3", endpoint_url=s3.endpoint_url, region_name="us-east-1").delete_object(
        Bucket=s3.bucket, Key=s3.object_key(lost))  # lost at rest, behind our back

    clean = scrub_by_prefix(env.storage, env.replicas, "primary")
    assert (clean.checked, clean.corrupted, clean.missing) == (len(env.blobs), 0, 0)
    found = scrub_by_prefix(env.storage, env.replicas, "local")
    assert (found.checked, found.corrupted, found.missing) == (len(env.blobs), 1, 0)
    assert rotten in found.problems[0]
    gone = scrub_by_cursor(env.storage, env.replicas, "s3")
    assert (gone.checked, gone.corrupted, gone.missing) == (len(env.blobs), 0, 1)
    assert statuses(env.storage)[("local", rotten)] == "corrupted"
    assert statuses(env.storage)[("s3", lost)] == "missing"
    status = replication_status(env.storage.catalog, env.replicas, 3)
    assert status.under_replicated == 2 and not status.meets_policy

    # The director re-replicates the lost copy; the rotten one is never overwritten.
    replicate_all(env, retention=3)
    assert statuses(env.storage)[("s3", lost)] == "present"
    assert statuses(env.storage)[("local", rotten)] == "corrupted"
    assert listing(local) == before["local"] and listing(s3) == before["s3"]
    assert local.check(rotten).status == "corrupt"  # left in place for a person to see

    # Once an operator removes the rotten object, scrub notices and it is copied again.
    local.local_path(rotten).unlink()
    again = scrub_by_cursor(env.storage, env.replicas, "local")
    assert again.missing == 1 and again.checked == len(env.blobs)
    replicate_all(env, retention=3)
    assert present_at(env.storage, "local") == set(env.blobs)
    assert replication_status(env.storage.catalog, env.replicas, 3).meets_policy
    assert listing(local) == before["local"] and listing(s3) == before["s3"]
    assert_statuses_truthful(env)


def test_a_restored_corrupt_copy_becomes_present(env_local: Env) -> None:
    env = env_local
    replicate_all(env, retention=2)
    local = env.replicas["local"].require()
    assert isinstance(local, LocalBlobStore)
    victim = max(env.blobs, key=lambda h: len(env.blobs[h]))
    path = local.local_path(victim)
    pristine = path.read_bytes()
    flip_byte(path, 100)
    assert scrub_by_cursor(env.storage, env.replicas, "local").corrupted == 1
    path.write_bytes(pristine)  # an operator restored it from a backup
    report = scrub_by_cursor(env.storage, env.replicas, "local")
    assert report.restored == 1 and report.checked == len(env.blobs)
    assert statuses(env.storage)[("local", victim)] == "present"


def test_scrub_of_an_unreadable_store_raises(env_local: Env) -> None:
    env = env_local
    env.replicas["local"].error = "store 'local': unreachable"
    with pytest.raises(Exception, match="unreachable"):
        scrub_store(env.storage.catalog, env.replicas, "local")
