"""A copy that failed is never recorded `present`.

Each test makes real copies fail: an S3 endpoint (moto_server behind a fault-injecting
proxy) answering 500 to every upload, a local replica where a blob's folder cannot be made,
a local replica on a full filesystem. After every pass the catalog is checked against what
each store really holds, read back through a store opened apart from the run's (for S3,
straight on moto, not through the proxy); replication-status then counts the copies as
still needed (not in progress), and once the fault is gone a later pass makes them present.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from archive_pipelines.blobstore import BlobStore, LocalBlobStore, open_store
from archive_pipelines.replication import (
    BatchReport,
    ReplicaSet,
    archive_batch,
    replication_status,
)
from archive_pipelines.settings import StoreSettings
from archive_pipelines.storage.assembly import StorageParts
from archive_testkit.servers.faulty_http import FaultyProxy
from archive_testkit.tmpfs import resize_tmpfs
from tests.helpers.replication import (
    MAX_AGE,
    listing,
    local_replica,
    open_with_replicas,
    populate,
    present_at,
    s3_replica,
    statuses,
)

pytestmark = pytest.mark.faults  # the fault-injection suite (issue 18): pytest -m faults

RETENTION = 2  # the primary's copy and one at the replica


@pytest.fixture
def opened() -> Iterator[list[StorageParts]]:
    parts: list[StorageParts] = []
    yield parts
    for storage in parts:
        storage.close()
        storage.catalog.engine.dispose()


def _open(opened: list[StorageParts], data_dir: Path, tmp_path: Path, replica: StoreSettings,
          catalog_url: str = "") -> tuple[StorageParts, dict[str, bytes]]:
    storage = open_with_replicas(data_dir, [replica], catalog_url=catalog_url,
                                 retention=RETENTION)
    opened.append(storage)
    return storage, populate(storage, tmp_path)


def _pass(storage: StorageParts, blobs: dict[str, bytes]) -> BatchReport:
    """One worker pass over every blob, with freshly opened (and probed) stores."""
    replicas = ReplicaSet.open(storage.catalog, storage.settings)
    return archive_batch(storage.catalog, replicas, sorted(blobs), retention=RETENTION,
                         max_age=MAX_AGE, width=4, raise_on_failure=False)


def _assert_truthful(storage: StorageParts, name: str, truth: BlobStore,
                     blobs: dict[str, bytes]) -> set[str]:
    """Every copy at `name` the catalog calls present is in `truth` and reads back as the
    blob; returns those copies. No copy is left `ongoing` by a pass that has ended."""
    present = present_at(storage, name)
    assert present <= listing(truth), f"recorded present, not there: {present - listing(truth)}"
    for digest in present:
        with truth.open(digest) as reader:
            assert reader.read() == blobs[digest], digest
    left = {h for (store, h), status in statuses(storage).items()
            if store == name and status == "ongoing"}
    assert left == set(), f"copies left ongoing after the pass: {left}"
    return present


def _assert_still_needed(storage: StorageParts, name: str, missing: int) -> None:
    """replication-status counts the blobs without a copy at `name` as short of the policy,
    none of them as in progress."""
    status = replication_status(storage.catalog, ReplicaSet.open(storage.catalog, storage.settings),
                                RETENTION, max_age=MAX_AGE)
    assert (status.under_replicated, status.in_progress) == (missing, 0)
    assert not status.meets_policy


def _assert_all_there(storage: StorageParts, name: str, truth: BlobStore,
                      blobs: dict[str, bytes]) -> None:
    assert _assert_truthful(storage, name, truth, blobs) == set(blobs)
    status = replication_status(storage.catalog, ReplicaSet.open(storage.catalog, storage.settings),
                                RETENTION, max_age=MAX_AGE)
    assert status.meets_policy and status.present(name) == len(blobs)


def test_uploads_the_s3_endpoint_fails_are_never_recorded_present(
        data_dir: Path, tmp_path: Path, catalog_url: str, s3_endpoint_url: str, s3_bucket: str,
        monkeypatch: pytest.MonkeyPatch, opened: list[StorageParts]) -> None:
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "2")  # each failing upload: two tries, then out
    with FaultyProxy(s3_endpoint_url) as proxy:
        storage, blobs = _open(opened, data_dir, tmp_path,
                               s3_replica(proxy.url, s3_bucket, name="s3r"), catalog_url)
        truth = open_store(s3_replica(s3_endpoint_url, s3_bucket, name="s3r"), data_dir)
        proxy.fail(500, "InternalError", methods={"PUT"})
        failed = _pass(storage, blobs)
        assert _assert_truthful(storage, "s3r", truth, blobs) == set()
        assert listing(truth) == set()
        assert any(r.method == "PUT" and r.injected for r in proxy.requests)
        assert failed.failed_copies["s3r"] >= 1 and failed.copies["s3r"] == 0
        _assert_still_needed(storage, "s3r", len(blobs))

        proxy.heal()
        healed = _pass(storage, blobs)
        assert healed.ok and healed.copies["s3r"] == len(blobs)
        _assert_all_there(storage, "s3r", truth, blobs)


@pytest.mark.unit
def test_a_local_copy_whose_folder_cannot_be_made_is_never_recorded_present(
        data_dir: Path, tmp_path: Path, opened: list[StorageParts]) -> None:
    """One object's folder is taken by a file (root or not, nothing can create it): that
    copy fails, the store stays in, and every other copy is made and recorded."""
    replica = local_replica()
    storage, blobs = _open(opened, data_dir, tmp_path, replica)
    truth = open_store(replica, data_dir)
    assert isinstance(truth, LocalBlobStore)
    large = max(blobs, key=lambda h: len(blobs[h]))  # streamed (the others: checked bytes)
    small = next(h for h, data in blobs.items() if 0 < len(data) < 1000)
    obstacles = set()
    for victim in (large, small):
        folder = truth.local_path(victim).parent
        folder.parent.mkdir(parents=True, exist_ok=True)
        folder.write_bytes(b"not a folder")
        obstacles.add(folder)
    blocked = {h for h in blobs if truth.local_path(h).parent in obstacles}

    failed = _pass(storage, blobs)
    present = _assert_truthful(storage, "local", truth, blobs)
    assert present == set(blobs) - blocked
    assert failed.failed_copies["local"] == len(blocked)
    assert failed.copies["local"] == len(blobs) - len(blocked)
    assert {statuses(storage)[("local", h)] for h in blocked} == {"missing"}
    _assert_still_needed(storage, "local", len(blocked))

    for folder in obstacles:
        folder.unlink()
    healed = _pass(storage, blobs)
    assert healed.ok and healed.copies["local"] == len(blocked)
    _assert_all_there(storage, "local", truth, blobs)


@pytest.fixture
def small_tmpfs(tmpfs: Callable[[str], Path]) -> Path:
    """A 1 MiB tmpfs (see the `tmpfs` fixture)."""
    return tmpfs("1m")


def test_copies_that_do_not_fit_a_full_store_are_never_recorded_present(
        data_dir: Path, tmp_path: Path, small_tmpfs: Path, opened: list[StorageParts]) -> None:
    replica = local_replica(path=str(small_tmpfs / "replica"))
    storage, blobs = _open(opened, data_dir, tmp_path, replica)
    truth = open_store(replica, data_dir)
    large = max(blobs, key=lambda h: len(blobs[h]))
    assert len(blobs[large]) > 2 << 20  # random bytes: no codec makes them fit in 1 MiB

    failed = _pass(storage, blobs)
    present = _assert_truthful(storage, "local", truth, blobs)
    assert large not in present and large not in listing(truth)
    assert failed.failed_copies["local"] >= 1
    assert "no space left on device" in failed.store_problems["local"]
    _assert_still_needed(storage, "local", len(blobs) - len(present))

    resize_tmpfs(small_tmpfs, "16m")
    healed = _pass(storage, blobs)
    assert healed.ok and healed.copies["local"] == len(blobs) - len(present)
    _assert_all_there(storage, "local", truth, blobs)
