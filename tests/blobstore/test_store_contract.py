"""The behaviour every store shares: local raw, local zstd, S3 raw and S3 zstd."""

import hashlib
import io
import os
import threading
from pathlib import Path

import pytest

from archive_pipelines.blobstore import (
    BlobNotFound,
    BlobStore,
    BlobStoreError,
    LocalBlobStore,
    StoreNotWritable,
    sha256_file,
)
from archive_pipelines.blobstore.keys import CHUNK_SIZE
from archive_pipelines.blobstore.s3 import S3Network
from tests.blobstore.stored_objects import read_stored
from tests.helpers.blobstores import MakeStore


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _read_all(store: BlobStore, sha256: str) -> bytes:
    with store.open(sha256) as reader:
        return reader.read()


class _ChunkyStream(io.RawIOBase):
    """A stream that hands out at most 1000 bytes per read, like a socket."""

    def __init__(self, data: bytes) -> None:
        self._data = io.BytesIO(data)

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
        chunk = self._data.read(min(len(buffer), 1000))
        buffer[:len(chunk)] = chunk
        return len(chunk)


@pytest.mark.parametrize("size", [0, 1000, CHUNK_SIZE, CHUNK_SIZE + 1])
def test_put_file_round_trip(store: BlobStore, tmp_path: Path, size: int) -> None:
    data = os.urandom(size // 2) + b"compressible " * (size // 26)
    data += b"x" * (size - len(data))
    source = tmp_path / "source.bin"
    source.write_bytes(data)

    result = store.put_file(source)

    assert result.sha256 == _sha(data)
    assert result.size == size
    assert result.created
    assert result.stored_bytes == len(read_stored(store, result.sha256))
    assert store.exists(result.sha256)
    assert _read_all(store, result.sha256) == data
    assert store.check(result.sha256, expected_size=size).status == "ok"
    assert store.check(result.sha256).status == "ok"


def test_stored_bytes_are_the_codec_encoding(store: BlobStore) -> None:
    data = b"a" * 100_000
    result = store.put_bytes(data)
    stored = read_stored(store, result.sha256)
    if store.codec == "raw":
        assert stored == data
    else:
        assert stored.startswith(b"\x28\xb5\x2f\xfd")  # zstd magic
        assert len(stored) < 1000


def test_put_stream_reads_until_eof_in_chunks(store: BlobStore) -> None:
    data = os.urandom(300_000)
    result = store.put_stream(io.BufferedReader(_ChunkyStream(data)))
    assert (result.sha256, result.size, result.created) == (_sha(data), len(data), True)
    assert _read_all(store, result.sha256) == data


def test_an_identical_put_is_deduplicated(store: BlobStore, tmp_path: Path) -> None:
    data = b"same bytes " * 1000
    source = tmp_path / "copy.txt"
    source.write_bytes(data)

    first = store.put_bytes(data)
    again = [store.put_bytes(data), store.put_file(source),
             store.put_stream(io.BytesIO(data)), store.put_verified(_sha(data), io.BytesIO(data))]

    assert first.created and first.stored_bytes > 0
    for result in again:
        assert (result.sha256, result.size, result.stored_bytes, result.created) == (
            first.sha256, len(data), 0, False)
    assert list(store.iter_hashes()) == [first.sha256]


def test_a_20_mb_file(store: BlobStore, tmp_path: Path) -> None:
    block = os.urandom(1024 * 1024)
    source = tmp_path / "big.bin"
    with open(source, "wb") as out:
        for i in range(20):
            out.write(block if i % 2 else b"\0" * len(block))
    sha256, size = sha256_file(source)

    result = store.put_file(source)

    assert (result.sha256, result.size) == (sha256, 20 * 1024 * 1024)
    digest = hashlib.sha256()
    with store.open(sha256) as reader:
        while chunk := reader.read(CHUNK_SIZE):
            digest.update(chunk)
    assert digest.hexdigest() == sha256
    assert store.check(sha256, expected_size=size).status == "ok"


def test_put_file_refuses_what_is_not_a_regular_file(store: BlobStore, tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)  # hashing it would block forever
    for path in (tmp_path, fifo):
        with pytest.raises(BlobStoreError, match="not a regular file"):
            store.put_file(path)
    with pytest.raises(FileNotFoundError):
        store.put_file(tmp_path / "vanished")


def test_open_a_missing_blob(store: BlobStore) -> None:
    missing = _sha(b"never stored")
    assert not store.exists(missing)
    with pytest.raises(BlobNotFound, match=missing) as raised:
        store.open(missing)
    assert store.name in str(raised.value)
    assert "\n" not in str(raised.value)


def test_a_bad_hash_is_a_value_error(store: BlobStore) -> None:
    for call in (store.key, store.exists, store.open, store.check, store.delete,
                 store.local_path):
        with pytest.raises(ValueError, match="sha256"):
            call("ABC")
    with pytest.raises(ValueError):
        store.put_verified("../etc/passwd", io.BytesIO(b""))
    with pytest.raises(ValueError):
        list(store.iter_hashes("XYZ"))


def test_iter_hashes_lists_exactly_what_was_put(store: BlobStore) -> None:
    hashes = {store.put_bytes(f"blob {i}".encode()).sha256 for i in range(16)}

    assert sorted(store.iter_hashes()) == sorted(hashes)
    for prefix in {h[:n] for h in list(hashes)[:3] for n in (1, 2, 3, 4, 5, 64)} | {"f0f0"}:
        assert sorted(store.iter_hashes(prefix)) == sorted(
            h for h in hashes if h.startswith(prefix)), prefix


def test_iter_hashes_of_an_empty_store(store: BlobStore) -> None:
    assert list(store.iter_hashes()) == []


def test_delete(store: BlobStore) -> None:
    keep, drop = store.put_bytes(b"keep").sha256, store.put_bytes(b"drop").sha256

    assert store.delete(drop) is True
    assert store.delete(drop) is False
    assert not store.exists(drop)
    assert store.check(drop).status == "missing"
    assert list(store.iter_hashes()) == [keep]
    assert store.put_bytes(b"drop").created  # can be stored again


def test_concurrent_puts_of_one_object(make_store: MakeStore, store_kind: str,
                                      tmp_path: Path) -> None:
    # moto_server (unlike S3) may answer 500 to PUTs of one key racing each other, several
    # times on a loaded box: the S3 store gets botocore's full retry budget here (10 tries).
    options = {} if store_kind.startswith("local") else {"network": S3Network(attempts=10)}
    store = make_store(store_kind, **options)
    data = os.urandom(512 * 1024)
    source = tmp_path / "shared.bin"
    source.write_bytes(data)
    barrier = threading.Barrier(8)
    results, errors = [], []

    def put(i: int) -> None:
        try:
            barrier.wait()
            results.append(store.put_file(source) if i % 2 else store.put_bytes(data))
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=put, args=(i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert errors == []
    assert {r.sha256 for r in results} == {_sha(data)}
    assert any(r.created for r in results)
    assert store.check(_sha(data), expected_size=len(data)).status == "ok"
    assert list(store.iter_hashes()) == [_sha(data)]
    if isinstance(store, LocalBlobStore):  # one writer won; the others found its object
        assert sum(r.created for r in results) == 1
        assert [p.name for p in store.root.rglob("*") if p.is_file()] == [_sha(data) + (
            ".zst" if store.codec == "zstd" else "")]


def test_a_read_only_store(make_store: MakeStore, store_kind: str, tmp_path: Path) -> None:
    stored = make_store(store_kind).put_bytes(b"already there").sha256
    source = tmp_path / "new.txt"
    source.write_bytes(b"new")
    store = make_store(store_kind, writable=False)

    for attempt in (lambda: store.put_bytes(b"new"), lambda: store.put_file(source),
                    lambda: store.put_stream(io.BytesIO(b"new")),
                    lambda: store.put_verified(_sha(b"new"), io.BytesIO(b"new")),
                    lambda: store.delete(stored)):
        with pytest.raises(StoreNotWritable, match=f"store '{store.name}' is read-only"):
            attempt()
    assert _read_all(store, stored) == b"already there"
    assert store.check(stored).status == "ok"
    assert list(store.iter_hashes()) == [stored]


@pytest.mark.parametrize(("offset", "length"), [(0, 10), (1000, 4096), (CHUNK_SIZE - 3, 10),
                                                 (CHUNK_SIZE + 5, 100), (0, 0)])
def test_read_range_gives_the_raw_bytes_of_the_range(store: BlobStore, offset: int,
                                                     length: int) -> None:
    data = os.urandom(CHUNK_SIZE + 50)
    sha = store.put_bytes(data).sha256

    assert store.read_range(sha, offset, length) == data[offset:offset + length]


def test_read_range_past_the_end_is_short_and_absent_blob_is_not_found(store: BlobStore) -> None:
    sha = store.put_bytes(b"0123456789").sha256

    assert store.read_range(sha, 6, 100) == b"6789"
    assert store.read_range(sha, 50, 10) == b""
    with pytest.raises(BlobNotFound):
        store.read_range(_sha(b"never stored"), 0, 10)


def test_local_copy_holds_the_raw_bytes_and_is_removed_after(store: BlobStore,
                                                             tmp_path: Path) -> None:
    data = os.urandom(3000) + b"text " * 1000
    sha = store.put_bytes(data).sha256
    spool = tmp_path / "spool"
    spool.mkdir()

    with store.local_copy(sha, spool_dir=spool) as path:
        assert path.read_bytes() == data
    if store.local_path(sha) is None or store.codec != "raw":
        assert list(spool.iterdir()) == []  # a temporary copy, gone
    else:
        assert path == store.local_path(sha)  # the blob's own file, not a copy
    with pytest.raises(BlobNotFound), store.local_copy(_sha(b"absent"), spool_dir=spool):
        pass
