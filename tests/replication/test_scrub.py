"""Scrub finds rot and loss at rest; the director then re-replicates; nothing is deleted."""

from __future__ import annotations

import boto3
import pytest

from archive_pipelines.blobstore import LocalBlobStore, S3BlobStore
from archive_pipelines.replication import ScrubReport, replication_status, scrub_store
from archive_pipelines.replication.stores import ReplicaSet
from archive_pipelines.storage.assembly import StorageParts
from tests.helpers.replication import (
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
            total.add(part)
            cursor = part.next_cursor
            if cursor is None:
                break
    return total


def scrub_by_cursor(storage: StorageParts, replicas: ReplicaSet, store: str) -> ScrubReport:
    total = ScrubReport(store)
    cursor: str | None = None
    while True:
        part = scrub_store(storage.catalog, replicas, store, cursor=cursor, limit=5)
        total.add(part)
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
    rotten_bytes = local.local_path(rotten).read_bytes()
    boto3.client("s3", endpoint_url=s3.endpoint_url, region_name="us-east-1").delete_object(
        Bucket=s3.bucket, Key=s3.object_key(lost))  # lost at rest, behind our back

    clean = scrub_by_prefix(env.storage, env.replicas, "primary")
    assert (clean.checked, clean.corrupted, clean.missing) == (len(env.blobs), 0, 0)
    found = scrub_by_prefix(env.storage, env.replicas, "local")
    assert (found.checked, found.corrupted, found.missing, found.set_aside) == (
        len(env.blobs), 1, 0, 1)
    assert rotten in found.problems[0] and "set aside to quarantine/" in found.problems[0]
    gone = scrub_by_cursor(env.storage, env.replicas, "s3")
    assert (gone.checked, gone.corrupted, gone.missing) == (len(env.blobs), 0, 1)
    # The rotten object was moved out of its key (kept, not deleted): its copy is missing.
    assert statuses(env.storage)[("local", rotten)] == "missing"
    assert statuses(env.storage)[("s3", lost)] == "missing"
    quarantined = list((local.root / "quarantine").iterdir())
    assert [p.name.split(".")[0] for p in quarantined] == [rotten]
    assert quarantined[0].read_bytes() == rotten_bytes
    status = replication_status(env.storage.catalog, env.replicas, 3)
    assert status.under_replicated == 2 and not status.meets_policy

    # The director copies both blobs there again; the set-aside bytes stay for a person.
    replicate_all(env, retention=3)
    assert statuses(env.storage)[("s3", lost)] == "present"
    assert statuses(env.storage)[("local", rotten)] == "present"
    assert local.check(rotten).ok and quarantined[0].read_bytes() == rotten_bytes
    assert present_at(env.storage, "local") == set(env.blobs)
    assert replication_status(env.storage.catalog, env.replicas, 3).meets_policy
    assert listing(local) == before["local"] and listing(s3) == before["s3"]
    again = scrub_by_cursor(env.storage, env.replicas, "local")
    assert (again.checked, again.ok, again.bad) == (len(env.blobs), len(env.blobs), 0)
    assert_statuses_truthful(env)


@pytest.mark.unit
def test_a_corrupt_copy_that_cannot_be_set_aside_stays_until_restored(env_local: Env) -> None:
    env = env_local
    replicate_all(env, retention=2)
    local = env.replicas["local"].require()
    assert isinstance(local, LocalBlobStore)
    victim = max(env.blobs, key=lambda h: len(env.blobs[h]))
    path = local.local_path(victim)
    pristine = path.read_bytes()
    flip_byte(path, 100)
    env.replicas["local"].write_error = "store 'local': read-only file system"
    found = scrub_by_cursor(env.storage, env.replicas, "local")
    assert (found.corrupted, found.set_aside) == (1, 0) and "left in place" in found.problems[0]
    assert statuses(env.storage)[("local", victim)] == "corrupted"
    assert local.check(victim).status == "corrupt"  # still there for a person to see
    path.write_bytes(pristine)  # an operator restored it from a backup
    report = scrub_by_cursor(env.storage, env.replicas, "local")
    assert report.restored == 1 and report.checked == len(env.blobs)
    assert statuses(env.storage)[("local", victim)] == "present"


@pytest.mark.unit
def test_a_corrupt_copy_with_no_good_copy_elsewhere_stays_in_place(env_local: Env) -> None:
    env = env_local
    replicate_all(env, retention=2)
    primary = env.replicas["primary"].require()
    victim = max(env.blobs, key=lambda h: len(env.blobs[h]))
    path = primary.local_path(victim)
    assert path is not None
    flip_byte(path, 7)
    env.replicas["local"].error = "store 'local': unreachable"  # no source to repair from
    found = scrub_by_cursor(env.storage, env.replicas, "primary")
    assert (found.corrupted, found.set_aside) == (1, 0)
    assert statuses(env.storage)[("primary", victim)] == "corrupted"
    assert path.exists()


@pytest.mark.unit
@pytest.mark.parametrize("other", ["missing", "corrupted"])
def test_the_last_good_copy_is_never_set_aside_while_the_other_store_is_reachable(
        env_local: Env, other: str) -> None:
    """The other store answers, but the catalog records its copy as missing or corrupted:
    the primary's corrupt object is then the last copy there is, and stays where it is."""
    env = env_local
    replicate_all(env, retention=2)
    victim = max(env.blobs, key=lambda h: len(env.blobs[h]))
    local = env.replicas["local"].require()
    assert isinstance(local, LocalBlobStore)
    if other == "missing":
        local.local_path(victim).unlink()  # lost at rest
    else:
        flip_byte(local.local_path(victim), 50)  # rotten, and this store cannot set it aside
        env.replicas["local"].write_error = "store 'local': read-only file system"
    scrub_by_cursor(env.storage, env.replicas, "local")
    env.replicas["local"].write_error = None
    assert env.replicas["local"].readable and env.replicas["local"].writable
    assert statuses(env.storage)[("local", victim)] == other
    primary = env.replicas["primary"].require()
    assert isinstance(primary, LocalBlobStore)
    path = primary.local_path(victim)
    flip_byte(path, 7)
    rotten = path.read_bytes()

    found = scrub_by_cursor(env.storage, env.replicas, "primary")

    assert (found.corrupted, found.set_aside) == (1, 0), \
        f"the last copy was set aside though the other one is {other}: {found.problems}"
    assert statuses(env.storage)[("primary", victim)] == "corrupted"
    assert path.read_bytes() == rotten  # still at its place, for a person to repair
    assert not (primary.root / "quarantine").exists() or not any(
        (primary.root / "quarantine").iterdir())


@pytest.mark.unit
def test_scrub_of_an_unreadable_store_raises(env_local: Env) -> None:
    env = env_local
    env.replicas["local"].error = "store 'local': unreachable"
    with pytest.raises(Exception, match="unreachable"):
        scrub_store(env.storage.catalog, env.replicas, "local")
