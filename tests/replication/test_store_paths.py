"""The blob store paths replication leans on, on every store kind: checks that keep the
verified bytes, `put_verified_bytes`, and local writes that skip the stored-bytes digest."""

from __future__ import annotations

import hashlib
import io
import os
from pathlib import Path

import pytest
import zstandard

from archive_pipelines.blobstore import BlobIntegrityError, BlobStore, LocalBlobStore, S3BlobStore
from archive_pipelines.blobstore.encode import encode_bytes, encode_stream
from tests.blobstore.stored_objects import read_stored
from tests.helpers.blobstores import STORE_KINDS, store_kind_params

DATA = os.urandom(200_000) + b"text that compresses " * 20_000


@pytest.fixture(params=store_kind_params(STORE_KINDS))
def store(request: pytest.FixtureRequest, tmp_path: Path) -> BlobStore:
    backend, codec = str(request.param).split("-")
    if backend == "local":
        return LocalBlobStore(tmp_path / "store", name="primary", codec=codec)
    return S3BlobStore(bucket=request.getfixturevalue("s3_bucket"), prefix="/replica/one/",
                       name="replica", codec=codec,
                       endpoint_url=request.getfixturevalue("s3_endpoint_url"))


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _read_fully(store: BlobStore, sha256: str) -> bytes:
    with store.open(sha256) as reader:
        return reader.read()


def test_check_keeps_the_verified_bytes_when_asked(store: BlobStore) -> None:
    sha256 = store.put_bytes(DATA).sha256
    assert store.check(sha256, keep_up_to=len(DATA)).data == DATA
    assert store.check(sha256, keep_up_to=len(DATA) - 1).data is None  # too large to keep
    assert store.check(sha256).data is None
    empty = store.put_bytes(b"").sha256
    assert store.check(empty, expected_size=0, keep_up_to=10).data == b""


def test_check_stops_reading_past_the_expected_size(store: BlobStore) -> None:
    sha256 = store.put_bytes(DATA).sha256
    result = store.check(sha256, expected_size=1000, keep_up_to=len(DATA))
    assert result.status == "corrupt" and result.data is None
    assert result.detail == ("larger than 1000 bytes" if store.codec == "raw"
                             else "zstd: decompressed beyond 1000 bytes")


def test_put_verified_bytes_stores_the_blob_once(store: BlobStore) -> None:
    first = store.put_verified_bytes(_sha(DATA), DATA)
    assert (first.sha256, first.size, first.created) == (_sha(DATA), len(DATA), True)
    assert first.stored_bytes == len(read_stored(store, first.sha256))
    assert _read_fully(store, first.sha256) == DATA
    assert store.check(first.sha256, expected_size=len(DATA)).ok
    again = store.put_verified_bytes(_sha(DATA), DATA)
    assert (again.created, again.stored_bytes) == (False, 0)


def test_put_verified_bytes_rejects_other_bytes(store: BlobStore) -> None:
    with pytest.raises(BlobIntegrityError) as raised:
        store.put_verified_bytes(_sha(DATA), DATA[:-1])

    assert raised.value.detail.startswith("hash mismatch: got ")
    assert str(raised.value).startswith(f"store '{store.name}': blob {_sha(DATA)}: ")
    assert list(store.iter_hashes()) == []


@pytest.mark.unit
@pytest.mark.parametrize("codec", ["raw", "zstd"])
def test_the_stored_digest_is_only_computed_when_asked(codec: str) -> None:
    data = b"a blob for a local store " * 5000
    asked, skipped = io.BytesIO(), io.BytesIO()
    full = encode_stream(io.BytesIO(data), asked, codec=codec, zstd_level=3)  # type: ignore[arg-type]
    lean = encode_stream(io.BytesIO(data), skipped, codec=codec,  # type: ignore[arg-type]
                         zstd_level=3, stored_digest=False)
    assert asked.getvalue() == skipped.getvalue()
    assert full.stored_digest == hashlib.sha256(asked.getvalue()).digest()
    assert (lean.sha256, lean.size, lean.stored_bytes) == (full.sha256, full.size,
                                                            full.stored_bytes)
    # Raw: the stored bytes are the raw bytes, whose digest comes for free.
    assert lean.stored_digest == (full.stored_digest if codec == "raw" else b"")


@pytest.mark.unit
@pytest.mark.parametrize("codec", ["raw", "zstd"])
def test_encode_bytes_is_what_the_store_reads_back(codec: str) -> None:
    data = b"small blob " * 300
    stored = encode_bytes(data, codec=codec, zstd_level=3)  # type: ignore[arg-type]
    decoded = stored if codec == "raw" else zstandard.ZstdDecompressor().decompress(stored)
    assert decoded == data
