"""Build a blob store from its settings."""

from __future__ import annotations

from pathlib import Path

from archive_pipelines.blobstore.base import BlobStore
from archive_pipelines.blobstore.local import LocalBlobStore
from archive_pipelines.settings import StoreSettings


def open_store(settings: StoreSettings, data_dir: Path) -> BlobStore:
    """The store described by `settings`; a relative local path lives inside `data_dir`."""
    if settings.kind == "local":
        root = Path(settings.path).expanduser()
        if not root.is_absolute():
            root = Path(data_dir) / root
        return LocalBlobStore(root, name=settings.name, codec=settings.codec,
                              zstd_level=settings.zstd_level, writable=settings.writable)
    from archive_pipelines.blobstore.s3 import S3BlobStore  # boto3 is slow to import

    return S3BlobStore(bucket=settings.bucket, prefix=settings.prefix, name=settings.name,
                       codec=settings.codec, zstd_level=settings.zstd_level,
                       endpoint_url=settings.endpoint_url or None,
                       region=settings.region or None, writable=settings.writable)
