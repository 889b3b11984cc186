"""The copier: atomic per object, safe under concurrency, one bad object never stops the rest."""

from __future__ import annotations

import errno
import os
import stat
import threading
from pathlib import Path

import pytest
import zstandard

from archive_pipelines.blobstore import BlobStore, LocalBlobStore, S3BlobStore
from archive_pipelines.replication import CopyItem, copy_object, copy_objects
from archive_pipelines.replication.copier import map_parallel
from tests.blobstore.stored_objects import stored_files, write_stored
from tests.helpers.replication import assert_store_sound, listing
from tests.helpers.storage import sha

DATA = [os.urandom(n) for n in (0, 1, 4096, 70_000, 1_500_000)] + [b"text " * 5000]


@pytest.fixture
def source(tmp_path: Path) -> LocalBlobStore:
    store = LocalBlobStore(tmp_path / "source", name="source", codec="raw")
    for data in DATA:
        store.put_bytes(data)
    return store


@pytest.fixture(params=[pytest.param("local", marks=pytest.mark.unit), "s3"])  # local: no server
def destination(request: pytest.FixtureRequest, tmp_path: Path) -> BlobStore:
    if request.param == "local":
        return LocalBlobStore(tmp_path / "dest", name="dest", codec="zstd")
    endpoint = request.getfixturevalue("s3_endpoint_url")
    bucket = request.getfixturevalue("s3_bucket")
    return S3BlobStore(bucket=bucket, name="dest", endpoint_url=endpoint, codec="zstd")


ITEMS = [CopyItem(sha(data), len(data)) for data in DATA]


def test_copies_every_object_and_an_identical_one_counts(source: LocalBlobStore,
                                                         destination: BlobStore) -> None:
    first = copy_objects(source, destination, ITEMS, width=3)
    assert [o.sha256 for o in first] == [i.sha256 for i in ITEMS]
    assert all(o.ok and o.created for o in first)
    assert listing(destination) == {i.sha256 for i in ITEMS}
    assert_store_sound(destination)
    second = copy_objects(source, destination, ITEMS, width=3)
    assert all(o.ok and not o.created and o.stored_bytes == 0 for o in second)


def test_many_copiers_of_the_same_objects_at_once(source: LocalBlobStore,
                                                  destination: BlobStore) -> None:
    barrier = threading.Barrier(6)
    results: list[list[bool]] = []

    def copier() -> None:
        barrier.wait()
        results.append([o.ok for o in copy_objects(source, destination, ITEMS, width=2)])

    threads = [threading.Thread(target=copier) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert results == [[True] * len(ITEMS)] * 6
    assert listing(destination) == {i.sha256 for i in ITEMS}
    assert_store_sound(destination)
    if isinstance(destination, LocalBlobStore):  # no temp file left behind by the losers
        assert len(stored_files(destination.root)) == len(ITEMS)


def test_a_zstd_bomb_is_stopped_at_the_blob_size(tmp_path: Path, destination: BlobStore
                                                 ) -> None:
    replica = LocalBlobStore(tmp_path / "replica", name="replica", codec="zstd")
    item = CopyItem(sha(b"small"), 5)
    write_stored(replica, item.sha256, zstandard.ZstdCompressor().compress(bytes(32 << 20)))
    outcome = copy_object(replica, destination, item)
    assert not outcome.ok and "decompressed beyond 5 bytes" in (outcome.error or "")
    assert listing(destination) == set()


@pytest.mark.unit
def test_a_destination_that_fills_up_fails_only_the_objects_that_do_not_fit(
        source: LocalBlobStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    dest = LocalBlobStore(tmp_path / "full", name="full", codec="raw")
    real_fsync = os.fsync

    def fsync(fd: int) -> None:
        st = os.fstat(fd)
        if stat.S_ISREG(st.st_mode) and st.st_size > 50_000:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    outcomes = copy_objects(source, dest, ITEMS, width=2)
    failed = {o.sha256 for o in outcomes if not o.ok}
    assert failed == {i.sha256 for i in ITEMS if i.size > 50_000}
    assert all("no space left on device" in (o.error or "") for o in outcomes if not o.ok)
    assert listing(dest) == {i.sha256 for i in ITEMS} - failed
    assert len(stored_files(dest.root)) == len(ITEMS) - len(failed)  # temp files removed
    assert_store_sound(dest)


def test_a_read_only_destination_is_each_objects_error(source: LocalBlobStore,
                                                       read_only_dir: Path) -> None:
    dest = LocalBlobStore(read_only_dir, name="ro", codec="zstd")
    outcomes = copy_objects(source, dest, ITEMS, width=2)
    assert len(outcomes) == len(ITEMS)
    assert all(not o.ok and (o.error or "").startswith("store 'ro': cannot write ")
               and "\n" not in (o.error or "") for o in outcomes)
    assert list(read_only_dir.iterdir()) == []


def test_a_checked_copy_writes_the_verified_bytes_without_reading_the_source_again(
        source: LocalBlobStore, destination: BlobStore) -> None:
    data = DATA[3]
    checked = source.check(sha(data), expected_size=len(data), keep_up_to=len(data))
    assert checked.ok and checked.data == data
    source.delete(sha(data))  # the copy must not need the source any more
    outcome = copy_object(source, destination, CopyItem(sha(data), len(data), checked.data))
    assert outcome.ok and outcome.created
    with destination.open(sha(data)) as reader:
        assert reader.read() == data


def test_bytes_that_do_not_hash_to_the_blob_are_never_stored(
        source: LocalBlobStore, destination: BlobStore) -> None:
    data = DATA[2]
    outcome = copy_object(source, destination,
                          CopyItem(sha(data), len(data), bytes([data[0] ^ 0xFF]) + data[1:]))
    assert not outcome.ok and "hash" in (outcome.error or "")
    assert listing(destination) == set()


@pytest.mark.unit
def test_check_keeps_only_small_good_blobs(source: LocalBlobStore) -> None:
    small, large = DATA[3], DATA[4]
    assert source.check(sha(small), keep_up_to=len(small) - 1).data is None
    assert source.check(sha(large), keep_up_to=1 << 20).data is None
    assert source.check(sha(small)).data is None  # not asked
    path = source.local_path(sha(small))
    os.chmod(path, 0o644)
    path.write_bytes(bytes([small[0] ^ 0xFF]) + small[1:])  # ("x" + ... was the blob 1 in 256 times)
    damaged = source.check(sha(small), keep_up_to=1 << 20)
    assert damaged.status == "corrupt" and damaged.data is None


@pytest.mark.unit
@pytest.mark.parametrize("width", [1, 4])
def test_map_parallel_runs_cheap_items_on_the_calling_thread(width: int) -> None:
    caller = threading.get_ident()
    ran_on: dict[int, int] = {}

    def work(item: int) -> int:
        ran_on[item] = threading.get_ident()
        return item * item

    items = list(range(40))
    assert map_parallel(work, items, width=width, inline=lambda i: i % 3 != 0) == [
        i * i for i in items]
    assert all(ran_on[i] == caller for i in items if i % 3)
    queued = {ran_on[i] for i in items if i % 3 == 0}
    assert (caller not in queued) if width > 1 else queued == {caller}


@pytest.mark.unit
def test_map_parallel_starts_no_thread_when_every_item_is_cheap(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(threading.Thread, "start", lambda self: pytest.fail("thread started"))
    assert map_parallel(lambda i: i + 1, [1, 2, 3], width=8, inline=lambda i: True) == [2, 3, 4]


@pytest.mark.unit
def test_verified_bytes_to_a_local_store_are_copied_on_the_calling_thread(
        source: LocalBlobStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    dest = LocalBlobStore(tmp_path / "inline", name="inline", codec="zstd")
    caller = threading.get_ident()
    writers: set[int] = set()
    real = LocalBlobStore.put_verified_bytes

    def put(self: LocalBlobStore, sha256: str, data: bytes) -> object:
        writers.add(threading.get_ident())
        return real(self, sha256, data)

    monkeypatch.setattr(LocalBlobStore, "put_verified_bytes", put)
    items = [CopyItem(sha(data), len(data), data) for data in DATA]
    outcomes = copy_objects(source, dest, items, width=4)
    assert all(o.ok and o.created for o in outcomes) and writers == {caller}
    assert_store_sound(dest)
