"""The S3 store: key layout under a prefix, multipart uploads and clear errors."""

import hashlib
import os
import socket
import uuid
from pathlib import Path

import boto3
import pytest
from botocore.config import Config

from archive_pipelines.blobstore import BlobNotFound, BlobStoreError, S3BlobStore


def _client(endpoint: str):  # type: ignore[no-untyped-def]
    return boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1")


def _store(bucket: str, endpoint: str, **options: object) -> S3BlobStore:
    options = {"name": "replica", **options}
    return S3BlobStore(bucket=bucket, endpoint_url=endpoint, **options)  # type: ignore[arg-type]


@pytest.mark.parametrize(("prefix", "expected"), [
    ("", ""), ("/", ""), ("copies", "copies/"), ("/copies/two/", "copies/two/"),
])
def test_keys_under_a_prefix(s3_bucket: str, s3_endpoint_url: str, prefix: str,
                             expected: str) -> None:
    store = _store(s3_bucket, s3_endpoint_url, prefix=prefix, codec="zstd")
    result = store.put_bytes(b"hello")
    sha256 = result.sha256

    key = f"{expected}sha256/{sha256[:2]}/{sha256[2:4]}/{sha256}.zst"
    listed = _client(s3_endpoint_url).list_objects_v2(Bucket=s3_bucket)["Contents"]
    assert [item["Key"] for item in listed] == [key]
    assert store.object_key(sha256) == key
    head = _client(s3_endpoint_url).head_object(Bucket=s3_bucket, Key=key)
    assert head["Metadata"] == {"sha256": sha256, "raw-size": "5", "codec": "zstd"}
    assert head["ContentLength"] == result.stored_bytes
    assert list(store.iter_hashes()) == [sha256]


def test_an_object_put_by_someone_else_counts_as_stored(s3_bucket: str,
                                                        s3_endpoint_url: str) -> None:
    store = _store(s3_bucket, s3_endpoint_url, codec="raw")
    sha256 = hashlib.sha256(b"already").hexdigest()
    _client(s3_endpoint_url).put_object(Bucket=s3_bucket, Key=store.object_key(sha256),
                                        Body=b"already")
    result = store.put_bytes(b"already")
    assert (result.created, result.stored_bytes) == (False, 0)


def test_large_objects_go_multipart(s3_bucket: str, s3_endpoint_url: str, tmp_path: Path) -> None:
    store = _store(s3_bucket, s3_endpoint_url, codec="zstd", multipart_threshold=5 * 2**20)
    source = tmp_path / "big.bin"
    source.write_bytes(os.urandom(20 * 2**20))

    result = store.put_file(source)

    head = _client(s3_endpoint_url).head_object(Bucket=s3_bucket,
                                                Key=store.object_key(result.sha256))
    assert "-" in head["ETag"]  # a multipart ETag: "<md5 of part md5s>-<parts>"
    assert head["Metadata"]["sha256"] == result.sha256
    assert store.check(result.sha256, expected_size=20 * 2**20).ok


def _assert_one_clear_line(error: BaseException, *fragments: str) -> None:
    message = str(error)
    assert "\n" not in message
    for fragment in fragments:
        assert fragment in message


def test_a_missing_bucket(s3_bucket: str, s3_endpoint_url: str) -> None:
    missing = f"missing-{uuid.uuid4().hex[:12]}"
    store = _store(missing, s3_endpoint_url)
    sha256 = hashlib.sha256(b"x").hexdigest()

    for call in (lambda: store.put_bytes(b"x"), lambda: store.exists(sha256),
                 lambda: store.check(sha256), lambda: store.open(sha256),
                 lambda: list(store.iter_hashes()), lambda: store.delete(sha256)):
        with pytest.raises(BlobStoreError) as raised:
            call()
        assert not isinstance(raised.value, BlobNotFound)
        _assert_one_clear_line(raised.value, "store 'replica'",
                               f"bucket '{missing}' does not exist")


def test_no_credentials(s3_endpoint_url: str, tmp_path: Path,
                        monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE",
                "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "AWS_CONTAINER_CREDENTIALS_FULL_URI",
                "AWS_WEB_IDENTITY_TOKEN_FILE"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-credentials"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-config"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    store = _store("some-bucket", s3_endpoint_url, region="us-east-1")

    with pytest.raises(BlobStoreError) as raised:
        store.put_bytes(b"x")
    _assert_one_clear_line(raised.value, "store 'replica'", "no usable AWS credentials",
                           "'some-bucket'")


def test_an_unreachable_endpoint(s3_bucket: str) -> None:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        endpoint = f"http://127.0.0.1:{probe.getsockname()[1]}"
    client = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1",
                          config=Config(retries={"max_attempts": 1}, connect_timeout=2))
    store = S3BlobStore(bucket=s3_bucket, name="replica", client=client)

    with pytest.raises(BlobStoreError) as raised:
        store.put_bytes(b"x")
    _assert_one_clear_line(raised.value, "store 'replica'", "cannot reach the S3 endpoint",
                           endpoint)


def test_local_path_is_none(s3_bucket: str, s3_endpoint_url: str) -> None:
    store = _store(s3_bucket, s3_endpoint_url)
    assert store.local_path(store.put_bytes(b"x").sha256) is None
