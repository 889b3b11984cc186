"""check(), put_verified() and the size guard on every store."""

import functools
import hashlib
import io
import os

import pytest
import zstandard

from archive_pipelines.blobstore import BlobIntegrityError, BlobStore
from tests.blobstore.stored_objects import read_stored, write_stored

DATA = os.urandom(200_000) + b"text that compresses " * 20_000


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _read_fully(store: BlobStore, sha256: str, max_size: int | None = None) -> bytes:
    with store.open(sha256, max_size=max_size) as reader:
        return reader.read()


@functools.cache
def _zstd_bomb() -> bytes:
    """A small object that decompresses to 64 MiB."""
    return zstandard.ZstdCompressor(level=3).compress(b"\0" * (64 * 1024 * 1024))


def test_check_ok_and_missing(store: BlobStore) -> None:
    sha256 = store.put_bytes(DATA).sha256
    assert store.check(sha256, expected_size=len(DATA)).ok

    result = store.check(_sha(b"absent"))
    assert (result.status, result.sha256) == ("missing", _sha(b"absent"))
    assert store.name in result.detail


@pytest.mark.parametrize("where", [0.1, 0.9])
def test_check_finds_a_flipped_byte(store: BlobStore, where: float) -> None:
    sha256 = store.put_bytes(DATA).sha256
    stored = bytearray(read_stored(store, sha256))
    stored[int(len(stored) * where)] ^= 0x01
    write_stored(store, sha256, bytes(stored))

    result = store.check(sha256, expected_size=len(DATA))

    assert result.status == "corrupt"
    assert result.detail and "\n" not in result.detail
    if store.codec == "raw":
        assert result.detail.startswith("hash mismatch: got ")


def test_check_finds_a_wrong_size(store: BlobStore) -> None:
    sha256 = store.put_bytes(DATA).sha256
    assert store.check(sha256, expected_size=len(DATA) + 1).detail == (
        f"size mismatch: got {len(DATA)} bytes, expected {len(DATA) + 1}")
    assert store.check(sha256, expected_size=len(DATA) - 1).status == "corrupt"


def test_an_object_under_the_wrong_hash_is_corrupt(store: BlobStore) -> None:
    other = store.put_bytes(b"other content").sha256
    claimed = _sha(b"claimed content")
    write_stored(store, claimed, read_stored(store, other))
    result = store.check(claimed)
    assert (result.status, result.detail) == ("corrupt", f"hash mismatch: got {other[:16]}..")


@pytest.mark.parametrize("keep", [0, 13, 0.5, -1])
def test_check_finds_a_truncated_zstd_object(zstd_store: BlobStore, keep: float) -> None:
    sha256 = zstd_store.put_bytes(DATA).sha256
    stored = read_stored(zstd_store, sha256)
    cut = int(len(stored) * keep) if isinstance(keep, float) else keep % len(stored)
    write_stored(zstd_store, sha256, stored[:cut])

    result = zstd_store.check(sha256)

    assert result.status == "corrupt"
    assert result.detail.startswith("zstd"), result.detail
    with pytest.raises(BlobIntegrityError, match=f"store '{zstd_store.name}': blob {sha256}"):
        _read_fully(zstd_store, sha256)


def test_check_rejects_an_object_that_is_not_zstd(zstd_store: BlobStore) -> None:
    sha256 = _sha(b"plain")
    write_stored(zstd_store, sha256, b"plain")
    result = zstd_store.check(sha256)
    assert result.status == "corrupt"
    assert result.detail.startswith("zstd")


def test_check_stops_a_zstd_bomb(zstd_store: BlobStore) -> None:
    expected = b"a small blob"
    bomb = _zstd_bomb()
    assert len(bomb) < 10_000
    write_stored(zstd_store, _sha(expected), bomb)

    result = zstd_store.check(_sha(expected), expected_size=len(expected))

    assert (result.status, result.detail) == ("corrupt", "zstd: decompressed beyond 12 bytes")
    with pytest.raises(BlobIntegrityError, match="decompressed beyond 12 bytes"):
        _read_fully(zstd_store, _sha(expected), max_size=len(expected))


def test_open_max_size(store: BlobStore) -> None:
    sha256 = store.put_bytes(DATA).sha256
    assert _read_fully(store, sha256, max_size=len(DATA)) == DATA
    with pytest.raises(BlobIntegrityError, match=f"blob {sha256}: .*{len(DATA) - 1} bytes"):
        _read_fully(store, sha256, max_size=len(DATA) - 1)


def test_put_verified_stores_a_matching_stream(store: BlobStore) -> None:
    result = store.put_verified(_sha(DATA), io.BytesIO(DATA), size=len(DATA))
    assert (result.sha256, result.size, result.created) == (_sha(DATA), len(DATA), True)
    assert store.check(result.sha256, expected_size=len(DATA)).ok


@pytest.mark.parametrize(("stream", "size", "detail"), [
    (DATA[:-1] + b"!", None, "hash mismatch: got "),
    (DATA[:-1], None, "hash mismatch: got "),
    (DATA, len(DATA) - 1, f"size mismatch: got more than {len(DATA) - 1} bytes"),
    (DATA, len(DATA) + 1, f"size mismatch: got {len(DATA)} bytes"),
])
def test_put_verified_rejects_other_bytes(store: BlobStore, stream: bytes, size: int | None,
                                          detail: str) -> None:
    with pytest.raises(BlobIntegrityError) as raised:
        store.put_verified(_sha(DATA), io.BytesIO(stream), size=size)

    assert raised.value.detail.startswith(detail)
    assert str(raised.value).startswith(f"store '{store.name}': blob {_sha(DATA)}: ")
    assert not store.exists(_sha(DATA))
    assert not store.exists(_sha(stream))
    assert list(store.iter_hashes()) == []
