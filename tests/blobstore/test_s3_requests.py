"""The S3 store counts the HTTP requests it sends, by operation, and a put of a blob
already present costs one request. The counts are checked against a counting proxy in
front of moto_server: what actually went over the wire."""

from __future__ import annotations

import base64
import hashlib
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest

from archive_pipelines.blobstore import S3BlobStore
from archive_pipelines.blobstore.s3 import S3Network
from archive_pipelines.blobstore.s3_requests import request_cost
from archive_testkit.servers.faulty_http import FaultyProxy

BODY = b"<html><body>" + b"a small page " * 300 + b"</body></html>"
OTHER = b"<html><body>" + b"another page " * 300 + b"</body></html>"


@pytest.fixture
def proxy(s3_endpoint_url: str) -> Iterator[FaultyProxy]:
    with FaultyProxy(s3_endpoint_url) as running:
        yield running


def _store(bucket: str, proxy: FaultyProxy, codec: str = "zstd", **options: Any) -> S3BlobStore:
    return S3BlobStore(bucket=bucket, prefix="p", name="s3", codec=codec, endpoint_url=proxy.url,
                       region="us-east-1", network=S3Network(attempts=3), **options)


def _sent(store: S3BlobStore, proxy: FaultyProxy) -> dict[str, int]:
    """The store's counts since the last call, checked against the requests the proxy saw."""
    counts = store.take_request_counts()
    seen = len(proxy.requests)
    proxy.reset_counts()
    assert sum(counts.values()) == seen, (counts, seen)
    return counts


@pytest.mark.parametrize("codec", ["raw", "zstd"])
def test_requests_per_operation(s3_bucket: str, proxy: FaultyProxy, codec: str,
                                tmp_path: Path) -> None:
    store = _store(s3_bucket, proxy, codec)
    first = store.put_bytes(BODY)
    assert first.created
    # The first lookup that misses also asks whether the bucket exists, once per store.
    assert _sent(store, proxy) == {"HeadObject": 1, "HeadBucket": 1, "PutObject": 1}
    assert store.put_bytes(OTHER).created
    assert _sent(store, proxy) == {"HeadObject": 1, "PutObject": 1}

    with store.open(first.sha256) as reader:
        assert reader.read() == BODY
    assert _sent(store, proxy) == {"GetObject": 1}
    assert store.exists(first.sha256) and not store.exists("0" * 64)
    assert _sent(store, proxy) == {"HeadObject": 2}
    assert sorted(store.iter_hashes()) == sorted([first.sha256, hashlib.sha256(OTHER).hexdigest()])
    assert _sent(store, proxy) == {"ListObjectsV2": 1}
    assert store.delete(first.sha256)
    assert _sent(store, proxy) == {"HeadObject": 1, "DeleteObject": 1}
    assert store.request_counts() == {}  # taken


@pytest.mark.parametrize("codec", ["raw", "zstd"])
@pytest.mark.parametrize("look_before_put", [True, False])
def test_a_put_of_a_present_blob_is_one_request(s3_bucket: str, proxy: FaultyProxy, codec: str,
                                                look_before_put: bool, tmp_path: Path) -> None:
    store = _store(s3_bucket, proxy, codec, look_before_put=look_before_put)
    put = store.put_bytes(BODY)
    assert put.created
    store.take_request_counts()
    proxy.reset_counts()
    source = tmp_path / "page.html"
    source.write_bytes(BODY)
    for again in (lambda: store.put_bytes(BODY),
                  lambda: store.put_verified_bytes(put.sha256, BODY),
                  lambda: store.put_file(source)):
        result = again()
        assert (result.sha256, result.created, result.stored_bytes) == (put.sha256, False, 0)
        sent = _sent(store, proxy)
        assert sent == ({"HeadObject": 1} if look_before_put else {"PutObject": 1})
    assert store.check(put.sha256, expected_size=len(BODY)).ok


def test_a_conditional_put_of_a_new_blob_is_one_request(s3_bucket: str,
                                                        proxy: FaultyProxy) -> None:
    store = _store(s3_bucket, proxy, look_before_put=False)
    put = store.put_bytes(BODY)
    assert put.created and put.stored_bytes > 0
    assert _sent(store, proxy) == {"PutObject": 1}
    assert store.check(put.sha256).ok


@pytest.mark.parametrize("codec", ["raw", "zstd"])
def test_every_put_carries_a_sha256_checksum_s3_keeps(s3_bucket: str, s3_endpoint_url: str,
                                                     codec: str) -> None:
    store = S3BlobStore(bucket=s3_bucket, name="s3", codec=codec, endpoint_url=s3_endpoint_url)
    put = store.put_bytes(BODY)
    client = boto3.client("s3", endpoint_url=s3_endpoint_url, region_name="us-east-1")
    key = store.object_key(put.sha256)
    stored = client.get_object(Bucket=s3_bucket, Key=key)["Body"].read()
    head = client.head_object(Bucket=s3_bucket, Key=key, ChecksumMode="ENABLED")
    assert head["ChecksumSHA256"] == base64.b64encode(hashlib.sha256(stored).digest()).decode()


def test_retries_count_as_the_requests_they_are(s3_bucket: str, proxy: FaultyProxy) -> None:
    store = _store(s3_bucket, proxy)
    proxy.fail(503, "SlowDown", times=2, methods={"PUT"})
    assert store.put_bytes(BODY).created
    assert _sent(store, proxy) == {"HeadObject": 1, "HeadBucket": 1, "PutObject": 3}


def test_a_multipart_upload_counts_each_part(s3_bucket: str, proxy: FaultyProxy) -> None:
    store = _store(s3_bucket, proxy, codec="raw", multipart_threshold=5 << 20)
    data = os.urandom(17 << 20)  # parts are at least 16 MiB: two parts
    assert store.put_bytes(data).created
    assert _sent(store, proxy) == {"HeadObject": 1, "HeadBucket": 1, "CreateMultipartUpload": 1,
                                   "UploadPart": 2, "CompleteMultipartUpload": 1}


def test_the_counts_are_exact_across_threads(s3_bucket: str, proxy: FaultyProxy) -> None:
    store = _store(s3_bucket, proxy)
    sha256 = store.put_bytes(BODY).sha256
    store.take_request_counts()
    proxy.reset_counts()
    threads, lookups = 8, 40
    start = threading.Barrier(threads)

    def look() -> None:
        start.wait()
        for _ in range(lookups):
            assert store.exists(sha256)

    workers = [threading.Thread(target=look) for _ in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert _sent(store, proxy) == {"HeadObject": threads * lookups}


@pytest.mark.unit
def test_request_cost_at_list_prices() -> None:
    # A million new blobs stored HEAD-first: $0.40 of HEADs and $5 of PUTs; DELETE is free.
    assert request_cost({"HeadObject": 1_000_000, "PutObject": 1_000_000,
                         "DeleteObject": 5}) == pytest.approx(5.40)
    assert request_cost({"GetObject": 1_000_000}) == pytest.approx(0.40)
