"""What a data dir with an S3 primary recorded, and what its bucket holds: read straight from
the catalog's tables and from the bucket (boto3, not the store under test)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import boto3
from sqlalchemy import select

from archive_pipelines.catalog import Catalog
from archive_pipelines.catalog.models import Blob, BlobCopy, SnapshotFile, Store

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client


def s3_client(endpoint_url: str) -> S3Client:
    return boto3.client("s3", endpoint_url=endpoint_url, region_name="us-east-1")


def recorded_present(catalog: Catalog, *, store: str = "primary") -> set[str]:
    """Every blob the catalog records present on `store`."""
    with catalog.reading() as tx:
        return set(tx.session.scalars(
            select(Blob.sha256).join(BlobCopy, BlobCopy.blob_id == Blob.id)
            .join(Store, Store.id == BlobCopy.store_id)
            .where(Store.name == store, BlobCopy.status == "present")))


def recorded_files(catalog: Catalog) -> dict[tuple[str, str], str]:
    """(snapshot id, relative path) -> sha256 of every file row."""
    with catalog.reading() as tx:
        return {(sid, rel): sha for sid, rel, sha in tx.session.execute(
            select(SnapshotFile.snapshot_id, SnapshotFile.relative_path, Blob.sha256)
            .join(Blob, Blob.id == SnapshotFile.blob_id))}


def bucket_hashes(client: S3Client, bucket: str, prefix: str = "archive") -> set[str]:
    """The sha256 of every blob object under `prefix` (`<prefix>/sha256/ab/cd/<hash>`)."""
    found = set()
    for page in client.get_paginator("list_objects_v2").paginate(
            Bucket=bucket, Prefix=f"{prefix}/sha256/"):
        found.update(item["Key"].rsplit("/", 1)[-1] for item in page.get("Contents", []))
    return found


def blob_bytes(client: S3Client, bucket: str, sha256: str, prefix: str = "archive") -> bytes:
    key = f"{prefix}/sha256/{sha256[:2]}/{sha256[2:4]}/{sha256}"
    return bytes(client.get_object(Bucket=bucket, Key=key)["Body"].read())
