"""Reach past a store's API to read or damage the bytes it holds (for integrity tests)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import boto3

from archive_pipelines.blobstore import BlobStore, LocalBlobStore, S3BlobStore

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client


def _s3_client(store: S3BlobStore) -> S3Client:
    return boto3.client("s3", endpoint_url=store.endpoint_url, region_name="us-east-1")


def read_stored(store: BlobStore, sha256: str) -> bytes:
    """The object's bytes as stored (compressed for zstd)."""
    if isinstance(store, LocalBlobStore):
        return Path(store.local_path(sha256)).read_bytes()
    assert isinstance(store, S3BlobStore)
    response = _s3_client(store).get_object(Bucket=store.bucket, Key=store.object_key(sha256))
    return bytes(response["Body"].read())


def write_stored(store: BlobStore, sha256: str, data: bytes) -> None:
    """Replace (or create) the object under this blob's key with `data`, bypassing all checks."""
    if isinstance(store, LocalBlobStore):
        path = store.local_path(sha256)
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.exists():
            path.chmod(0o644)
        path.write_bytes(data)
        return
    assert isinstance(store, S3BlobStore)
    _s3_client(store).put_object(Bucket=store.bucket, Key=store.object_key(sha256), Body=data)


def stored_files(root: Path) -> list[Path]:
    """Every regular file under a local store's root (blobs and any leftover temp files)."""
    return sorted(p for p in root.rglob("*") if p.is_file())
